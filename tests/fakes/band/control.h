/* control: the fake's own endpoints under /_fake/ (no key; loopback only).
 *
 *   POST /_fake/control   {"action": ...} -> 200 {"ok":true} | 400 {"ok":false,"error"}
 *     drop_ws                            abort every WebSocket (no close frame)
 *     refuse      {"seconds": N}         close new api connections at accept for N s
 *     close       {"code": C, "reason"?} close every WebSocket with code C
 *     fail_rest   {"count","status","retry_after"?}  fail the next N REST calls
 *     delay       {"ms": N}              hold every REST answer N ms (0 = off)
 *     garbage                            send malformed frames to every socket
 *     seed_agent  {"name","age_minutes","description"?}  a backdated agent of
 *                                        the first user -> {"ok":true,"id"}
 *   GET  /_fake/stats     {"live_agents","live_rooms","ws_connections",
 *                          "agent_connections","rest_calls","upgrade_attempts"}
 *   POST /_fake/shutdown  {"ok":true}, then the server stops.
 *
 * These answer on both ports; only the control port keeps answering while
 * the api port refuses connections.
 */
#ifndef FAKE_BAND_CONTROL_H
#define FAKE_BAND_CONTROL_H

#include "http.h"
#include "server.h"

#define CONTROL_PREFIX "/_fake/"

void control_route(server *srv, const http_request *req, http_response *resp);

#endif
