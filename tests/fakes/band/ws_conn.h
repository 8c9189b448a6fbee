/* ws_conn: one Phoenix connection, shared by ws.c (the socket under it)
 * and channel.c (the topics on it). Not for other modules: they hold a
 * ws_conn only through ws.h and channel.h.
 *
 * The struct is the per-session data lws allocates for the WebSocket
 * protocol, so it lives exactly as long as the connection.
 */
#ifndef FAKE_BAND_WS_CONN_H
#define FAKE_BAND_WS_CONN_H

#include <cjson/cJSON.h>
#include <libwebsockets.h>
#include <stdint.h>

#include "server.h"
#include "store.h"
#include "vec.h"
#include "ws.h"

#define WS_REASON_SZ 124 /* a close frame holds at most 123 bytes of reason */

typedef struct ws_frame {
    struct ws_frame *next;
    size_t len;
    unsigned char *buf; /* LWS_PRE bytes of headroom, then the text */
} ws_frame;

struct ws_conn {
    struct lws *wsi;
    server *srv;
    store_principal *who;
    vec subs;              /* channel.c's subscriptions, in joining order */
    ws_frame *head, *tail; /* frames waiting for a writeable callback */
    char *rx;              /* the message being reassembled */
    size_t rx_len;
    int rx_overflow;
    int closing; /* nothing more is queued */
    int dropped; /* the socket was shut down under lws */
    int close_code;
    char close_reason[WS_REASON_SZ];
    int64_t last_rx_ms; /* monotonic: the last whole message received */
};

/* Queues one text frame; nothing once the connection is closing. */
void ws_send_text(ws_conn *c, const char *text);

/* Queues the JSON text of `frame` and deletes it. */
void ws_send_json(ws_conn *c, cJSON *frame);

#endif
