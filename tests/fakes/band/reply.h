/* reply: the platform's response envelopes (protocol §2).
 *
 * Success bodies are {"data": ...}, lists add {"metadata": ...}; every
 * error is {"error": {"code", "message", "request_id", "details"?}} with a
 * fresh request id, and a 422 always carries `details` (JSON-pointer keys
 * to lists of messages). Each function takes ownership of the cJSON trees
 * it is given and fills the response.
 */
#ifndef FAKE_BAND_REPLY_H
#define FAKE_BAND_REPLY_H

#include <cjson/cJSON.h>

#include "http.h"

void reply_data(http_response *resp, int status, cJSON *data);
void reply_list(http_response *resp, cJSON *items, cJSON *metadata);
void reply_no_content(http_response *resp);

/* A bare JSON document, not enveloped (the /_fake/... control answers). */
void reply_json(http_response *resp, int status, cJSON *doc);

/* An error envelope. `pointer` names the offending field for a 422's
 * details ("" or NULL: details stay empty). */
void reply_error(http_response *resp, int status, const char *code, const char *pointer,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The body alone of an error envelope, malloc'd (for answers that are not
 * built through a response, such as a rejected WebSocket upgrade). */
char *reply_error_body(const char *code, const char *pointer, int with_details,
                       const char *message);

#endif
