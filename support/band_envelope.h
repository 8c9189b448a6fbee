/* band_envelope: what a Band REST answer means, from its status and body.
 *
 * Band wraps every success as {"data": ...} (lists add "metadata": {...}),
 * answers 204 with no body for "nothing to give", and wraps every error as
 * {"error": {"code", "message", "request_id", "details"?}}
 * (reference/band-protocol.md section 2). band_envelope_parse() turns one
 * answer into either the data or a one-line error message, and is pure: no
 * I/O, no state but redact's registry of secrets, which it only reads. It
 * is the part of the REST client that sees raw server bytes, so it is
 * fuzzed and must never crash on any input.
 *
 * Error messages quote the server: the error envelope's code, message,
 * details and request id, or, for a body that is no envelope (a proxy's
 * HTML page), a short excerpt. Everything quoted is redacted as a whole
 * before it is cut, and control bytes become spaces. A 2xx body is never
 * quoted: the register answer carries a freshly minted key that redact
 * may not know yet.
 */
#ifndef SMOKE_BAND_ENVELOPE_H
#define SMOKE_BAND_ENVELOPE_H

#include <cJSON.h>
#include <stddef.h>

#include "err.h"

#define BAND_CODE_SZ 64 /* error codes and request ids, cut to fit */

/* A parsed answer. `root` is owned (release with band_envelope_free);
 * `data` and `metadata` point into it. */
typedef struct band_envelope {
    long status;
    int no_content;                /* 1 for a 204: no body, no data */
    cJSON *root;                   /* the whole body when it was JSON, else NULL */
    const cJSON *data;             /* 2xx only: the "data" member (any JSON type) */
    const cJSON *metadata;         /* 2xx only: "metadata" when it is an object */
    char code[BAND_CODE_SZ];       /* non-2xx: error.code, else "" */
    char request_id[BAND_CODE_SZ]; /* non-2xx: error.request_id, else "" */
} band_envelope;

/* Reads a body of `len` bytes (not necessarily NUL-terminated; NULL counts
 * as empty whatever len says) answered with HTTP `status`:
 * - 204: ERR_OK, no_content = 1, the body ignored;
 * - other 2xx: ERR_OK when the body is one JSON object with a "data"
 *   member (any type) and "metadata", if present, is an object or null;
 *   ERR_PROTOCOL otherwise ("HTTP 200: the body has no \"data\"");
 * - other statuses in 100..599: ERR_HTTP with
 *   "HTTP 422 mentions_required: <message> <details> (request_id <id>)"
 *   from an error envelope (parts it lacks are left out), else
 *   "HTTP 502: <excerpt of about 160 bytes>" or "HTTP 502 (empty body)";
 *   code and request_id are filled from the envelope;
 * - a status outside 100..599: ERR_PROTOCOL.
 * ERR_NOMEM when the body cannot be copied; ERR_USAGE when out is NULL.
 * Call band_envelope_free afterwards, whatever it returned. */
err_code band_envelope_parse(long status, const char *body, size_t len,
                             band_envelope *out, char *err);

/* Releases the parsed body and zeroes the envelope. NULL is a no-op. */
void band_envelope_free(band_envelope *env);

#endif
