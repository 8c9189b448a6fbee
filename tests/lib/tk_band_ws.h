/* tk_band_ws: a small blocking WebSocket + Phoenix v2 client for tests.
 *
 * Written on raw sockets, not libwebsockets, so a test sees exactly what
 * the server sent: whether a close frame came and with which code, or
 * whether the TCP connection just ended. Loopback only, ws:// only. Every
 * wait is bounded by the caller's timeout. Pings are answered while
 * waiting.
 *
 * Phoenix helpers keep a backlog: frames read while waiting for another
 * one are kept, in order, for later waits, so a push that arrives before
 * the reply a test waits for is not lost.
 */
#ifndef SMOKE_TK_BAND_WS_H
#define SMOKE_TK_BAND_WS_H

#include <cjson/cJSON.h>
#include <stddef.h>

typedef struct tk_ws tk_ws;

#define TK_WS_OPEN (-1)        /* tk_ws_closed: still open when the wait ended */
#define TK_WS_NO_CLOSE_FRAME 0 /* tk_ws_closed: TCP ended without a close frame */

/* Upgrades on 127.0.0.1:port with `target` (path and query); sends
 * `x-api-key: header_key` when it is not NULL. *status (may be NULL) gets
 * the HTTP status (101 on success, 0 when nothing answered). NULL unless
 * the upgrade succeeded. */
tk_ws *tk_ws_open(int port, const char *target, const char *header_key, int *status);

/* One masked text frame. 0 on success. */
int tk_ws_send(tk_ws *ws, const char *text);

/* The next text frame (backlog first), malloc'd; NULL on timeout or close. */
char *tk_ws_recv(tk_ws *ws, int timeout_ms);

/* Reads until the server ends the connection or the time is up, dropping
 * text frames. Returns TK_WS_OPEN, TK_WS_NO_CLOSE_FRAME or the close code
 * (reason copied into `reason`, which may be NULL). */
int tk_ws_closed(tk_ws *ws, int timeout_ms, char *reason, size_t cap);

void tk_ws_free(tk_ws *ws);

/* Phoenix: joins `topic` with a fresh ref (join_ref == ref, copied to
 * join_ref_out when not NULL, 16 bytes). 1 = ok reply, 0 = error reply
 * (reason copied to `reason` when not NULL), -1 = no reply in time. */
int tk_ws_join(tk_ws *ws, const char *topic, char *join_ref_out, char *reason, size_t cap,
               int timeout_ms);

/* Sends [join_ref, ref, topic, event, payload_json] with a fresh ref,
 * copied to ref_out (16 bytes) when not NULL. 0 on success. */
int tk_ws_push(tk_ws *ws, const char *join_ref, const char *topic, const char *event,
               const char *payload_json, char *ref_out);

/* The next Phoenix frame matching topic and event (NULL = any) and ref
 * (NULL = any), parsed as the 5-element array; frames that do not match
 * stay in the backlog. NULL on timeout or close. */
cJSON *tk_ws_wait(tk_ws *ws, const char *topic, const char *event, const char *ref, int timeout_ms);

#endif
