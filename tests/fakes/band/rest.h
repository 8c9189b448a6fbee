/* rest: the Band REST API the fake serves (protocol §3 user calls, §4
 * agent calls), behind the X-API-Key header.
 *
 * Every path under /api/v1/me/ needs a user key and every path under
 * /api/v1/agent/ an agent key: an unknown or missing key is 401, the
 * other kind of key 403. Unknown paths are 404 and known paths with
 * another method 405, all in the error envelope. Bodies are parsed
 * defensively: not JSON is 400, JSON of the wrong shape 422.
 */
#ifndef FAKE_BAND_REST_H
#define FAKE_BAND_REST_H

#include "http.h"
#include "server.h"

void rest_route(server *srv, const http_request *req, http_response *resp);

#endif
