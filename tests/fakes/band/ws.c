#include "ws.h"

#include "clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "channel.h"
#include "must.h"
#include "reply.h"
#include "ws_conn.h"

#define WS_MESSAGE_MAX (1024 * 1024)

size_t ws_session_size(void)
{
    return sizeof(ws_conn);
}

static server *server_of(struct lws *wsi)
{
    return lws_context_user(lws_get_context(wsi));
}

/* ---- who is connecting ---------------------------------------------------- */

typedef struct ws_verdict {
    int status; /* 0 = accepted */
    const char *code;
    const char *message;
    store_principal *who;
} ws_verdict;

static int refuse(ws_verdict *v, int status, const char *code, const char *message)
{
    v->status = status;
    v->code = code;
    v->message = message;
    return -1;
}

/* The key from the x-api-key header, else from ?api_key=. A key too long
 * to hold is left out whole: a cut one must never match another. */
static void read_key(struct lws *wsi, char *key, size_t cap)
{
    char buf[IDENT_KEY_SZ + 16];
    const char *v = NULL;
    if (lws_hdr_custom_copy(wsi, buf, sizeof buf, "x-api-key:", 10) > 0) {
        v = buf;
        while (*v == ' ' || *v == '\t')
            v++;
    }
    if (!v || !*v)
        v = http_url_arg(wsi, "api_key", buf, sizeof buf);
    key[0] = '\0';
    if (v && strlen(v) < cap)
        memcpy(key, v, strlen(v) + 1);
}

/* agent_id narrows a connection to an agent: its own key, or its owner's. */
static int apply_agent_id(server *srv, struct lws *wsi, ws_verdict *v)
{
    char buf[IDENT_UUID_SZ + 16];
    const char *agent_id = http_url_arg(wsi, "agent_id", buf, sizeof buf);
    if (!agent_id || !*agent_id)
        return 0;
    if (v->who->kind == STORE_AGENT)
        return strcmp(v->who->id, agent_id) == 0
                   ? 0
                   : refuse(v, 403, "unauthorized", "agent_id does not match the API key");
    store_agent *agent = store_agent_by_id(srv->st, agent_id);
    if (!agent || &agent->owner->p != v->who)
        return refuse(v, 403, "unauthorized", "agent_id is not an agent of this user");
    v->who = &agent->p;
    return 0;
}

static int identify(server *srv, struct lws *wsi, ws_verdict *v)
{
    char path[HTTP_PATH_MAX] = "", buf[32], key[IDENT_KEY_SZ];
    memset(v, 0, sizeof *v);
    lws_hdr_copy(wsi, path, sizeof path, WSI_TOKEN_GET_URI);
    if (strcmp(path, WS_PATH) != 0)
        return refuse(v, 404, "not_found", "no WebSocket endpoint here");
    const char *vsn = http_url_arg(wsi, "vsn", buf, sizeof buf);
    if (!vsn || strcmp(vsn, "2.0.0") != 0)
        return refuse(v, 400, "unsupported_version", "vsn=2.0.0 is required");
    read_key(wsi, key, sizeof key);
    v->who = store_by_key(srv->st, key);
    if (!v->who)
        return refuse(v, 403, "unauthorized", "invalid or missing API key");
    return apply_agent_id(srv, wsi, v);
}

int ws_upgrade(server *srv, struct lws *wsi, http_response *reject)
{
    ws_verdict v;
    srv->upgrade_attempts++;
    if (identify(srv, wsi, &v) == 0 && srv->faults.reject_agent_ws && v.who &&
        v.who->kind == STORE_AGENT)
        refuse(&v, 403, "forbidden", "agent connections are refused (test fault)");
    else if (v.status == 0)
        return 0;
    http_answer(reject, v.status, reply_error_body(v.code, NULL, 0, v.message));
    return 1;
}

/* ---- the outgoing queue ----------------------------------------------------- */

void ws_send_text(ws_conn *c, const char *text)
{
    if (c->closing)
        return;
    size_t len = strlen(text);
    ws_frame *f = must_calloc(1, sizeof *f);
    f->buf = must_calloc(1, LWS_PRE + len + 1);
    memcpy(f->buf + LWS_PRE, text, len);
    f->len = len;
    if (c->tail)
        c->tail->next = f;
    else
        c->head = f;
    c->tail = f;
    lws_callback_on_writable(c->wsi);
}

void ws_send_json(ws_conn *c, cJSON *frame)
{
    char *text = cJSON_PrintUnformatted(frame);
    cJSON_Delete(frame);
    if (!text)
        abort();
    ws_send_text(c, text);
    free(text);
}

static void free_queue(ws_conn *c)
{
    while (c->head) {
        ws_frame *f = c->head;
        c->head = f->next;
        free(f->buf);
        free(f);
    }
    c->tail = NULL;
}

/* One frame per writeable callback; the close frame once the queue is empty. */
static int writeable(ws_conn *c)
{
    if (c->dropped)
        return -1;
    ws_frame *f = c->head;
    if (f) {
        c->head = f->next;
        if (!c->head)
            c->tail = NULL;
        int n = lws_write(c->wsi, f->buf + LWS_PRE, f->len, LWS_WRITE_TEXT);
        free(f->buf);
        free(f);
        if (n < 0)
            return -1;
        if (c->head || c->closing)
            lws_callback_on_writable(c->wsi);
        return 0;
    }
    if (!c->closing)
        return 0;
    lws_close_reason(c->wsi, (enum lws_close_status)c->close_code, (unsigned char *)c->close_reason,
                     strlen(c->close_reason));
    return -1;
}

/* ---- incoming ------------------------------------------------------------------ */

/* Reassembles fragments; whole text messages go to the channel layer,
 * messages over WS_MESSAGE_MAX and binary ones are dropped. */
static void receive(ws_conn *c, const void *in, size_t len)
{
    if (!c->rx_overflow && c->rx_len + len > WS_MESSAGE_MAX) {
        c->rx_overflow = 1;
    } else if (!c->rx_overflow && len) {
        char *rx = realloc(c->rx, c->rx_len + len);
        if (!rx)
            abort();
        memcpy(rx + c->rx_len, in, len);
        c->rx = rx;
        c->rx_len += len;
    }
    if (!lws_is_final_fragment(c->wsi) || lws_remaining_packet_payload(c->wsi))
        return;
    c->last_rx_ms = clock_mono_ms();
    if (!c->rx_overflow && !lws_frame_is_binary(c->wsi))
        channel_receive(c, c->rx, c->rx_len);
    free(c->rx);
    c->rx = NULL;
    c->rx_len = 0;
    c->rx_overflow = 0;
}

/* ---- connection lifecycle ------------------------------------------------------- */

/* One connection per agent: the newest wins, the older hears why and goes. */
static void supersede_older(ws_conn *c)
{
    char topic[128];
    snprintf(topic, sizeof topic, "agent_control:%s", c->who->id);
    cJSON *payload = cJSON_CreateObject();
    cJSON_AddStringToObject(payload, "reason", "superseded");
    cJSON_AddStringToObject(payload, "message", "a newer connection for this agent took over");
    cJSON_AddBoolToObject(payload, "retryable", 0);
    for (size_t i = 0; i < c->srv->sockets.len; i++) {
        ws_conn *old = c->srv->sockets.items[i];
        if (old == c || old->who != c->who || old->closing)
            continue;
        channel_push(old, topic, "supersede", payload);
        ws_close(old, 1000, "superseded");
    }
    cJSON_Delete(payload);
}

static void established(ws_conn *c, struct lws *wsi)
{
    c->wsi = wsi;
    c->srv = server_of(wsi);
    c->last_rx_ms = clock_mono_ms();
    vec_push(&c->srv->sockets, c);
    server_log(c->srv, "WS open %s %s", c->who->kind == STORE_AGENT ? "agent" : "user", c->who->id);
    if (c->who->kind == STORE_AGENT)
        supersede_older(c);
}

static void closed(ws_conn *c)
{
    if (!c->srv)
        return; /* never established */
    vec_remove(&c->srv->sockets, c);
    server_log(c->srv, "WS closed %s", c->who->id);
    free_queue(c);
    channel_leave_all(c);
    free(c->rx);
    c->rx = NULL;
}

int ws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
    ws_conn *c = user;
    ws_verdict v;

    switch (reason) {
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: return http_confirm_upgrade(wsi, in ? in : "");
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
        /* The api site already vetted this upgrade; here the headers are
         * still at hand to learn who it is. */
        if (identify(server_of(wsi), wsi, &v) != 0)
            return 1;
        c->who = v.who;
        return 0;
    case LWS_CALLBACK_ESTABLISHED: established(c, wsi); return 0;
    case LWS_CALLBACK_RECEIVE: receive(c, in, len); return 0;
    case LWS_CALLBACK_SERVER_WRITEABLE: return writeable(c);
    case LWS_CALLBACK_CLOSED: closed(c); return 0;
    default: return 0;
    }
}

/* ---- what the rest of the fake uses ------------------------------------------------ */

store_principal *ws_principal(const ws_conn *c)
{
    return c->who;
}

void ws_close(ws_conn *c, int code, const char *reason)
{
    if (c->closing)
        return;
    c->closing = 1;
    c->close_code = code;
    snprintf(c->close_reason, sizeof c->close_reason, "%s", reason ? reason : "");
    lws_callback_on_writable(c->wsi);
}

void ws_close_principal(server *srv, const store_principal *who, int code, const char *reason)
{
    for (size_t i = 0; i < srv->sockets.len; i++) {
        ws_conn *c = srv->sockets.items[i];
        if (c->who == who)
            ws_close(c, code, reason);
    }
}

void ws_close_all(server *srv, int code, const char *reason)
{
    for (size_t i = 0; i < srv->sockets.len; i++)
        ws_close(srv->sockets.items[i], code, reason);
}

/* shutdown, not close: lws still owns the descriptor and tears the
 * connection down itself once it reads the EOF. */
static void drop(ws_conn *c)
{
    free_queue(c);
    c->closing = c->dropped = 1;
    int fd = lws_get_socket_fd(c->wsi);
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
}

void ws_drop_all(server *srv)
{
    for (size_t i = 0; i < srv->sockets.len; i++)
        drop(srv->sockets.items[i]);
}

int ws_drop_silent(server *srv, int64_t now_ms, int64_t timeout_ms)
{
    int n = 0;
    for (size_t i = 0; i < srv->sockets.len; i++) {
        ws_conn *c = srv->sockets.items[i];
        if (c->dropped || c->who->kind != STORE_AGENT || now_ms - c->last_rx_ms < timeout_ms)
            continue;
        server_log(srv, "WS heartbeat timeout %s: nothing for %lld ms, dropped", c->who->id,
                   (long long)(now_ms - c->last_rx_ms));
        srv->heartbeat_drops++;
        drop(c);
        n++;
    }
    return n;
}

void ws_garbage_all(server *srv)
{
    for (size_t i = 0; i < srv->sockets.len; i++)
        channel_send_garbage(srv->sockets.items[i]);
}

int ws_count(const server *srv, int *agents)
{
    int n = 0, a = 0;
    for (size_t i = 0; i < srv->sockets.len; i++) {
        const ws_conn *c = srv->sockets.items[i];
        n++;
        a += c->who->kind == STORE_AGENT;
    }
    if (agents)
        *agents = a;
    return n;
}
