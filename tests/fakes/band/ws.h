/* ws: the WebSocket connections of the fake (protocol §5.1).
 *
 * Upgrade: /api/v1/socket/websocket with vsn=2.0.0 and a key, from the
 * x-api-key header (wins) or ?api_key=. An agent key may add agent_id (it
 * must be its own); a user key with agent_id of an agent it owns connects
 * as that agent. A bad or missing key is refused with 403, a missing vsn
 * with 400, both with the error envelope. Agents keep one connection: a
 * new one supersedes the older (a `supersede` push on agent_control, then
 * close 1000 "superseded"; last wins). Users may hold many.
 *
 * Each connection is a ws_conn, the per-session data of the "phoenix"
 * protocol; the server lists the open ones in srv->sockets. Outgoing
 * frames are queued and written one per writeable callback; a close waits
 * until the queue is flushed. What travels on a connection (topics,
 * joins, pushes) is channel.h's business; who gets what, fanout.h's.
 */
#ifndef FAKE_BAND_WS_H
#define FAKE_BAND_WS_H

#include <libwebsockets.h>
#include <stdint.h>

#include "http.h"
#include "server.h"
#include "store.h"

#define WS_PATH "/api/v1/socket/websocket"

typedef struct ws_conn ws_conn;

/* The protocol entry of the api vhost (the default for upgrades). */
int ws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                size_t len);
size_t ws_session_size(void);

/* The api site's upgrade hook: counts the attempt, checks path, vsn and key. */
int ws_upgrade(server *srv, struct lws *wsi, http_response *reject);

/* Who is on the other end. */
store_principal *ws_principal(const ws_conn *c);

/* Closes with a close frame (after what is queued). */
void ws_close(ws_conn *c, int code, const char *reason);
void ws_close_principal(server *srv, const store_principal *who, int code, const char *reason);
void ws_close_all(server *srv, int code, const char *reason);

/* Faults: drops every connection without a close frame (TCP shutdown), or
 * sends each one malformed frames (channel_send_garbage). */
void ws_drop_all(server *srv);

/* The platform's heartbeat timeout (~45 s without a heartbeat; band-
 * protocol.md 5.2): drops, like ws_drop_all, every agent connection that
 * received no whole message for timeout_ms. User connections are exempt:
 * the rehearsal scales the platform's clock, while band-smoke's own
 * observer beats at real time (a listed deviation). The real platform's way of
 * closing is not documented; no close frame is the one a frozen client
 * cannot mistake for a final close (1000) or a terminal one (1008).
 * Returns how many it dropped. */
int ws_drop_silent(server *srv, int64_t now_ms, int64_t timeout_ms);
void ws_garbage_all(server *srv);

/* Open connections; *agents (may be NULL) gets how many are agents. */
int ws_count(const server *srv, int *agents);

#endif
