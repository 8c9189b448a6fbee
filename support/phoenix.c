#include "phoenix.h"

#include <libwebsockets.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "config.h"
#include "phx_frame.h"
#include "phx_url.h"
#include "redact.h"

#define PROTOCOL_NAME "band-phoenix"
#define REF_SZ 24
#define LEAVE_TIMEOUT_MS 5000
#define CLOSE_WAIT_MS 2000
/* The longest single wait inside a blocking call, so deadlines are checked
 * often even if lws sleeps longer than asked. */
#define SLICE_MS 100
/* One lws log line, kept whole enough to explain a failure. */
#define LWS_LINE_SZ 256

typedef enum sub_state {
    SUB_PENDING, /* to be (re)joined once a connection opens */
    SUB_JOINING, /* join sent on this connection, no answer yet */
    SUB_JOINED,
} sub_state;

/* The outcome a blocking call waits for; lives on that call's stack. */
typedef struct waiter {
    int done;
    err_code rc;
    char reason[ERR_BUFSZ];
} waiter;

/* One topic the caller joined, in join order. */
typedef struct sub {
    struct sub *next;
    phx_client *client;
    char *topic;
    char join_ref[REF_SZ]; /* of the last join sent; "" before any */
    sub_state state;
    waiter *join_waiter;   /* the phx_join blocked on it, or NULL */
    int rejoining;         /* counted in client->rejoins_pending */
    lws_sorted_usec_list_t rejoin_timer;
} sub;

/* A text frame waiting for the socket, with lws's headroom before it. */
typedef struct outframe {
    struct outframe *next;
    size_t len;
    unsigned char buf[];
} outframe;

struct phx_client {
    phx_options opts; /* strings point at the copies below */
    char *ws_url, *api_key, *agent_id, *ca_file;
    phx_endpoint ep;
    char proxy_address[600]; /* "[user:pass@]host" for lws; ":0" = direct */
    int proxy_port;
    lws_retry_bo_t keepalive;
    struct lws_protocols protocols[2];
    struct lws_context *ctx;
    struct lws *wsi; /* the connection or attempt under way, or NULL */

    phx_conn_state state;
    int attempt_live; /* a connect attempt has not ended yet */
    int closing;      /* phx_close asked for the end */
    int freeing;      /* phx_client_free: lws callbacks must do nothing */
    int in_callback;  /* inside on_push / on_state */
    unsigned attempt; /* backoff exponent */
    unsigned failures; /* failed attempts since the last open connection */
    int64_t opened_at_ms;
    unsigned rejoins_pending;
    int announce_reconnect;

    uint64_t last_ref;
    sub *subs;
    outframe *outq;
    outframe **outq_tail;

    char *rx;
    size_t rx_len, rx_cap;
    int rx_continuing; /* the last fragment was not final */
    int rx_skip;       /* the message being received is dropped */

    int close_code;          /* received on the current connection */
    char close_reason[128];
    char hb_ref[REF_SZ];     /* unanswered heartbeat, "" when none */
    char leave_ref[REF_SZ];  /* the phx_leave being waited for */
    waiter *leave_waiter;
    char lws_error[LWS_LINE_SZ]; /* last lws error line */
    char last_error[ERR_BUFSZ];
    char final_reason[ERR_BUFSZ];
    uint64_t rng;
    phx_stats stats;
    lws_sorted_usec_list_t connect_timer, heartbeat_timer, wake_timer;
};

/* ---- logging ------------------------------------------------------------ */

/* The client being serviced on this thread: lws's log hook has no user
 * pointer (see "Logging" in phoenix.h). Set only around calls into lws. */
static _Thread_local phx_client *serviced;

static phx_client *bind_lws_logs(phx_client *c)
{
    phx_client *prev = serviced;
    serviced = c;
    return prev;
}

static void unbind_lws_logs(phx_client *prev)
{
    serviced = prev;
}

static void log_line(phx_client *c, const char *level, const char *logger, const char *msg)
{
    if (!c->opts.log)
        return;
    int64_t ms = clock_wall_ms(NULL);
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    char stamp[32] = "";
    if (gmtime_r(&secs, &tm))
        strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
    redact_fprintf(c->opts.log, "%s,%03d %s %s: %s\n", stamp, (int)(ms % 1000), level, logger,
                   msg);
    fflush(c->opts.log);
}

static void logmsg(phx_client *c, const char *level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void logmsg(phx_client *c, const char *level, const char *fmt, ...)
{
    if (!c->opts.log)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_line(c, level, "phx", msg);
}

static void lws_emit(int level, const char *line)
{
    char msg[LWS_LINE_SZ];
    snprintf(msg, sizeof msg, "%s", line);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    phx_client *c = serviced;
    if (!c) {
        redact_fprintf(stderr, "lws: %s\n", msg);
        return;
    }
    if (level == LLL_ERR)
        snprintf(c->lws_error, sizeof c->lws_error, "%s", msg);
    log_line(c, level == LLL_ERR ? "ERROR" : "WARNING", "lws", msg);
}

/* ---- small helpers ------------------------------------------------------ */

static int64_t now_ms(void)
{
    return clock_mono_ms();
}

static void new_ref(phx_client *c, char ref[REF_SZ])
{
    snprintf(ref, REF_SZ, "%llu", (unsigned long long)++c->last_ref);
}

/* xorshift64*: backoff jitter needs no quality, only independence from
 * other clients and processes (seeded per client). */
static double rand01(phx_client *c)
{
    c->rng ^= c->rng >> 12;
    c->rng ^= c->rng << 25;
    c->rng ^= c->rng >> 27;
    return (double)((c->rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static void finish(waiter *w, err_code rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void finish(waiter *w, err_code rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->reason, sizeof w->reason, fmt, ap);
    va_end(ap);
    w->rc = rc;
    w->done = 1;
}

static void emit_state(phx_client *c, phx_event ev, int code, const char *reason,
                       const char *topic)
{
    if (!c->opts.on_state)
        return;
    phx_state_info info = {ev, c->stats.generation, code, reason ? reason : "", topic};
    c->in_callback++;
    c->opts.on_state(&info, c->opts.ud);
    c->in_callback--;
}

/* ---- subscriptions ------------------------------------------------------ */

static sub *find_sub(const phx_client *c, const char *topic)
{
    for (sub *s = c->subs; s; s = s->next)
        if (strcmp(s->topic, topic) == 0)
            return s;
    return NULL;
}

static sub *add_sub(phx_client *c, const char *topic)
{
    sub *s = calloc(1, sizeof *s);
    if (!s || !(s->topic = strdup(topic))) {
        free(s);
        return NULL;
    }
    s->client = c;
    sub **tail = &c->subs;
    while (*tail)
        tail = &(*tail)->next;
    *tail = s;
    return s;
}

static void remove_sub(phx_client *c, sub *s)
{
    for (sub **p = &c->subs; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            break;
        }
    }
    lws_sul_cancel(&s->rejoin_timer);
    free(s->topic);
    free(s);
}

/* ---- sending ------------------------------------------------------------ */

static err_code queue_frame(phx_client *c, const char *join_ref, const char *ref,
                            const char *topic, const char *event, char *err)
{
    char *text;
    err_code rc = phx_frame_encode(join_ref, ref, topic, event, NULL, &text, err);
    if (rc != ERR_OK)
        return rc;
    size_t n = strlen(text);
    outframe *f = malloc(sizeof *f + LWS_PRE + n);
    if (!f) {
        free(text);
        return err_set(err, ERR_NOMEM, "out of memory queueing %s", event);
    }
    f->next = NULL;
    f->len = n;
    memcpy(f->buf + LWS_PRE, text, n);
    free(text);
    *c->outq_tail = f;
    c->outq_tail = &f->next;
    lws_callback_on_writable(c->wsi);
    return ERR_OK;
}

static void drop_outq(phx_client *c)
{
    while (c->outq) {
        outframe *f = c->outq;
        c->outq = f->next;
        free(f);
    }
    c->outq_tail = &c->outq;
}

/* One frame per WRITEABLE, as lws requires; asks for more if any remain. */
static int write_next(phx_client *c, struct lws *wsi)
{
    if (c->closing) {
        lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, (unsigned char *)"bye", 3);
        return -1;
    }
    outframe *f = c->outq;
    if (!f)
        return 0;
    c->outq = f->next;
    if (!c->outq)
        c->outq_tail = &c->outq;
    /* a short write is not an error: lws keeps the rest and sends it */
    int n = lws_write(wsi, f->buf + LWS_PRE, f->len, LWS_WRITE_TEXT);
    free(f);
    if (n < 0) {
        logmsg(c, "WARNING", "WebSocket write failed; dropping the connection");
        return -1;
    }
    if (c->outq)
        lws_callback_on_writable(wsi);
    return 0;
}

/* ---- joining and rejoining ---------------------------------------------- */

static void announce_reconnected(phx_client *c)
{
    c->announce_reconnect = 0;
    logmsg(c, "INFO", "Reconnected (generation %u); every topic has a rejoin answer",
           c->stats.generation);
    emit_state(c, PHX_RECONNECTED, 0, "", NULL);
}

/* One rejoin got its answer (or gave up waiting for it). */
static void rejoin_settled(phx_client *c)
{
    if (--c->rejoins_pending == 0 && c->announce_reconnect)
        announce_reconnected(c);
}

static void rejoin_timed_out(lws_sorted_usec_list_t *timer)
{
    sub *s = lws_container_of(timer, sub, rejoin_timer);
    phx_client *c = s->client;
    logmsg(c, "WARNING", "Transient rejoin failure for topic %s, will retry on next "
           "reconnect: no answer within %d ms", s->topic, c->opts.join_timeout_ms);
    s->state = SUB_PENDING;
    s->rejoining = 0;
    rejoin_settled(c);
}

/* Sends the join for s on the open connection. A rejoin (no phx_join
 * waiting on it) is timed here and counted towards PHX_RECONNECTED. */
static err_code send_join(phx_client *c, sub *s, int rejoin, char *err)
{
    new_ref(c, s->join_ref);
    err_code rc = queue_frame(c, s->join_ref, s->join_ref, s->topic, "phx_join", err);
    if (rc != ERR_OK) {
        s->state = SUB_PENDING;
        return rc;
    }
    s->state = SUB_JOINING;
    if (rejoin) {
        s->rejoining = 1;
        c->rejoins_pending++;
        lws_sul_schedule(c->ctx, 0, &s->rejoin_timer, rejoin_timed_out,
                         (lws_usec_t)c->opts.join_timeout_ms * LWS_US_PER_MS);
    }
    return ERR_OK;
}

static void join_answered(phx_client *c, sub *s, int ok, const char *reason)
{
    int counted = s->rejoining;
    s->rejoining = 0;
    lws_sul_cancel(&s->rejoin_timer);
    if (ok) {
        s->state = SUB_JOINED;
        logmsg(c, "INFO", "Successfully subscribed to topic %s", s->topic);
        if (s->join_waiter)
            finish(s->join_waiter, ERR_OK, "joined");
        s->join_waiter = NULL;
    } else if (s->join_waiter) {
        finish(s->join_waiter, ERR_PROTOCOL, "join %s refused: %s", s->topic, reason);
        s->join_waiter = NULL;
        remove_sub(c, s);
    } else {
        logmsg(c, "ERROR", "Failed to rejoin topic %s: %s", s->topic, reason);
        emit_state(c, PHX_REJOIN_FAILED, 0, reason, s->topic);
        remove_sub(c, s);
    }
    if (counted)
        rejoin_settled(c);
}

/* ---- receiving ---------------------------------------------------------- */

static const char *json_str(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int same(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static void route_reply(phx_client *c, const phx_frame *f)
{
    const char *status = json_str(f->payload, "status");
    const char *reason = json_str(cJSON_GetObjectItemCaseSensitive(f->payload, "response"),
                                  "reason");
    int ok = same(status, "ok");
    if (!ok && !reason)
        /* the SDK's default text for a refusal without a reason */
        reason = status ? "invalid topic" : "reply without a status";
    if (strcmp(f->topic, "phoenix") == 0) {
        if (c->hb_ref[0] && same(f->ref, c->hb_ref)) {
            c->hb_ref[0] = '\0';
            c->stats.heartbeat_replies++;
        }
        return;
    }
    if (c->leave_waiter && same(f->ref, c->leave_ref)) {
        if (ok)
            finish(c->leave_waiter, ERR_OK, "left");
        else
            finish(c->leave_waiter, ERR_PROTOCOL, "leave %s refused: %s", f->topic, reason);
        c->leave_waiter = NULL;
        return;
    }
    sub *s = find_sub(c, f->topic);
    if (s && s->state != SUB_JOINED && s->join_ref[0] && same(f->join_ref, s->join_ref))
        join_answered(c, s, ok, ok ? "" : reason);
}

static void route_push(phx_client *c, const phx_frame *f)
{
    sub *s = find_sub(c, f->topic);
    /* a null join_ref is what the platform docs promise, the current one
     * what the SDK insists on; section 11 says accept both */
    if (!s || s->state != SUB_JOINED || (f->join_ref && strcmp(f->join_ref, s->join_ref)))
        return;
    c->stats.pushes++;
    if (!c->opts.on_push)
        return;
    c->in_callback++;
    c->opts.on_push(f->topic, f->event, f->payload, c->opts.ud);
    c->in_callback--;
}

static void handle_text(phx_client *c, const char *text, size_t len)
{
    phx_frame f;
    char why[ERR_BUFSZ];
    if (phx_frame_decode(text, len, &f, why) != ERR_OK) {
        c->stats.frames_rejected++;
        logmsg(c, "WARNING", "Dropping a malformed frame: %s", why);
        return;
    }
    if (strcmp(f.event, "phx_reply") == 0)
        route_reply(c, &f);
    else if (strcmp(f.topic, "phoenix") != 0)
        route_push(c, &f);
    phx_frame_clear(&f);
}

static int rx_append(phx_client *c, const void *in, size_t len)
{
    if (c->rx_len + len > PHX_FRAME_MAX)
        return -1;
    if (c->rx_len + len > c->rx_cap) {
        size_t cap = c->rx_cap ? c->rx_cap : 4096;
        while (cap < c->rx_len + len)
            cap *= 2;
        char *p = realloc(c->rx, cap);
        if (!p)
            return -1;
        c->rx = p;
        c->rx_cap = cap;
    }
    memcpy(c->rx + c->rx_len, in, len);
    c->rx_len += len;
    return 0;
}

/* lws hands a message over in pieces (WebSocket fragments, and chunks of
 * its rx buffer); only the final piece completes it. */
static void on_receive(phx_client *c, struct lws *wsi, const void *in, size_t len)
{
    if (!c->rx_continuing) {
        c->rx_len = 0;
        c->rx_skip = lws_frame_is_binary(wsi);
    }
    if (!c->rx_skip && rx_append(c, in, len) != 0)
        c->rx_skip = 1;
    c->rx_continuing = !lws_is_final_fragment(wsi);
    if (c->rx_continuing)
        return;
    if (c->rx_skip) {
        c->stats.frames_rejected++;
        logmsg(c, "WARNING", "Dropping a binary or oversized frame");
    } else {
        handle_text(c, c->rx, c->rx_len);
    }
    c->rx_len = 0;
}

/* ---- connection lifecycle ----------------------------------------------- */

static void connect_due(lws_sorted_usec_list_t *timer);
static void attempt_failed(phx_client *c, struct lws *wsi, const char *why);
static void heartbeat_due(lws_sorted_usec_list_t *timer);

static void give_up(phx_client *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void give_up(phx_client *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->final_reason, sizeof c->final_reason, fmt, ap);
    va_end(ap);
    c->state = PHX_CLOSED;
    lws_sul_cancel(&c->connect_timer);
    logmsg(c, "WARNING", "%s", c->final_reason);
    for (sub *s = c->subs; s; s = s->next) {
        if (s->join_waiter)
            finish(s->join_waiter, ERR_CLOSED, "%s", c->final_reason);
        s->join_waiter = NULL;
    }
    emit_state(c, PHX_GAVE_UP, code, c->final_reason, NULL);
}

/* Schedules the next attempt; returns the delay chosen. */
static double schedule_retry(phx_client *c, int code, int64_t uptime_ms)
{
    int64_t delay = phx_backoff_delay_ms(&c->opts.backoff, c->attempt, code, rand01(c),
                                         rand01(c));
    if (c->opts.retry_delay)
        delay = c->opts.retry_delay(c->opts.retry_ud, c->stats.generation, code, uptime_ms, delay);
    if (delay < 0)
        delay = 0;
    c->attempt++;
    c->state = PHX_WAITING;
    lws_sul_schedule(c->ctx, 0, &c->connect_timer, connect_due,
                     (lws_usec_t)delay * LWS_US_PER_MS);
    return (double)delay / 1000.0;
}

static void start_attempt(phx_client *c)
{
    struct lws_client_connect_info i;
    memset(&i, 0, sizeof i);
    i.context = c->ctx;
    i.address = c->ep.host;
    i.port = c->ep.port;
    i.path = c->ep.path;
    i.host = c->ep.host; /* Host header, SNI and the certificate name */
    i.origin = NULL;     /* no Origin, like the Python client */
    i.ssl_connection = c->ep.tls ? LCCSCF_USE_SSL : 0;
    i.protocol = NULL;   /* Phoenix negotiates no subprotocol */
    i.local_protocol_name = PROTOCOL_NAME;
    i.retry_and_idle_policy = &c->keepalive;
    i.pwsi = &c->wsi;
    c->state = PHX_CONNECTING;
    c->attempt_live = 1;
    c->close_code = 0;
    c->close_reason[0] = '\0';
    c->lws_error[0] = '\0';
    if (!lws_client_connect_via_info(&i) && c->attempt_live)
        attempt_failed(c, NULL, "could not start a connection"); /* lws did not call back */
}

static void connect_due(lws_sorted_usec_list_t *timer)
{
    start_attempt(lws_container_of(timer, phx_client, connect_timer));
}

static void attempt_failed(phx_client *c, struct lws *wsi, const char *why)
{
    c->wsi = NULL;
    c->attempt_live = 0;
    c->stats.connect_failures++;
    c->failures++;
    int status = wsi ? (int)lws_http_client_http_response(wsi) : 0;
    char http[32] = "";
    if (status > 0 && status != 101)
        snprintf(http, sizeof http, " (HTTP %d)", status);
    /* OpenSSL 3's own text is "error:00000001:lib(0)::reason(1)"; the lws
     * error line logged just before says what really failed */
    int add_lws = c->lws_error[0] && !strstr(why, c->lws_error);
    snprintf(c->last_error, sizeof c->last_error, "%s%s%s%s", why, http,
             add_lws ? "; " : "", add_lws ? c->lws_error : "");
    if (c->closing) {
        c->state = PHX_CLOSED;
        return;
    }
    if (!c->opts.reconnect) {
        give_up(c, 0, "Could not connect and reconnect is off: %s", c->last_error);
    } else if (c->opts.max_attempts && c->failures >= c->opts.max_attempts) {
        give_up(c, 0, "Gave up after %u failed connection attempts: %s", c->failures,
                c->last_error);
    } else {
        double s = schedule_retry(c, 0, 0);
        logmsg(c, "WARNING", "WebSocket connection failed; retrying in %.2fs: %s", s,
               c->last_error);
    }
}

static void on_open(phx_client *c, struct lws *wsi)
{
    c->wsi = wsi;
    c->state = PHX_OPEN;
    c->attempt_live = 0;
    c->failures = 0;
    c->opened_at_ms = now_ms();
    c->stats.generation++;
    c->hb_ref[0] = '\0';
    c->rx_continuing = 0;
    lws_sul_schedule(c->ctx, 0, &c->heartbeat_timer, heartbeat_due,
                     (lws_usec_t)c->opts.heartbeat_ms * LWS_US_PER_MS);
    int reconnect = c->stats.generation > 1;
    logmsg(c, "INFO", "WebSocket connected (generation %u)", c->stats.generation);
    for (sub *s = c->subs; s; s = s->next) {
        char why[ERR_BUFSZ];
        if (send_join(c, s, reconnect && !s->join_waiter, why) != ERR_OK)
            logmsg(c, "WARNING", "Transient rejoin failure for topic %s, will retry on next "
                   "reconnect: %s", s->topic, why);
    }
    if (!reconnect)
        emit_state(c, PHX_CONNECTED, 0, "", NULL);
    else if (c->rejoins_pending == 0)
        announce_reconnected(c);
    else
        c->announce_reconnect = 1; /* by the last rejoin_settled */
}

/* Forgets everything tied to the connection that just ended. */
static void end_connection(phx_client *c)
{
    c->wsi = NULL;
    lws_sul_cancel(&c->heartbeat_timer);
    drop_outq(c);
    c->rx_len = 0;
    c->rx_continuing = 0;
    c->hb_ref[0] = '\0';
    c->rejoins_pending = 0;
    c->announce_reconnect = 0;
    for (sub *s = c->subs; s; s = s->next) {
        lws_sul_cancel(&s->rejoin_timer);
        s->rejoining = 0;
        s->state = SUB_PENDING;
    }
    if (c->leave_waiter)
        finish(c->leave_waiter, ERR_NETWORK, "the connection dropped before the leave "
               "was answered");
    c->leave_waiter = NULL;
}

static void connection_lost(phx_client *c)
{
    int code = c->close_code;
    char reason[LWS_LINE_SZ + 64];
    if (code)
        snprintf(reason, sizeof reason, "received %d (%s)", code, c->close_reason);
    else
        snprintf(reason, sizeof reason, "no close frame received%s%s",
                 c->lws_error[0] ? "; " : "", c->lws_error);
    int64_t uptime = now_ms() - c->opened_at_ms;
    end_connection(c);
    c->stats.disconnects++;
    c->stats.last_close_code = code;
    char code_text[16] = "None";
    if (code)
        snprintf(code_text, sizeof code_text, "%d", code);
    logmsg(c, "INFO", "Message routing stopped due to websocket close code=%s reason=%s",
           code_text, code ? c->close_reason : "None");
    if (c->closing) {
        c->state = PHX_CLOSED;
        return;
    }
    emit_state(c, PHX_DISCONNECTED, code, reason, NULL);
    if (uptime >= c->opts.backoff.stable_ms) /* section 8.2 */
        c->attempt = 0;
    switch (phx_close_classify(code)) {
    case PHX_CLOSE_FINAL:
        give_up(c, code, "Reconnect disabled for close code %d reason=%s", code,
                c->close_reason);
        return;
    case PHX_CLOSE_TERMINAL:
        give_up(c, code, "Reconnect disabled due to terminal close code %d (%s)", code,
                c->close_reason);
        return;
    case PHX_CLOSE_RETRY:
        break;
    }
    if (!c->opts.reconnect) {
        give_up(c, code, "Connection lost and reconnect is off: %s", reason);
        return;
    }
    /* lws 4.1.6 hands a received 1012, 1013 or 1014 over as 1002: read it
     * as the restart it most likely is, so the 1012 floor still applies */
    double s = schedule_retry(c, code == 1002 ? 1012 : code, uptime);
    logmsg(c, "INFO", "Reconnecting in %.2fs", s);
}

static void heartbeat_due(lws_sorted_usec_list_t *timer)
{
    phx_client *c = lws_container_of(timer, phx_client, heartbeat_timer);
    if (c->state != PHX_OPEN)
        return;
    if (c->hb_ref[0])
        logmsg(c, "WARNING", "Heartbeat response not received for ref=%s; server may be "
               "unresponsive", c->hb_ref);
    char ref[REF_SZ], why[ERR_BUFSZ];
    new_ref(c, ref);
    if (queue_frame(c, NULL, ref, "phoenix", "heartbeat", why) == ERR_OK) {
        memcpy(c->hb_ref, ref, REF_SZ);
        c->stats.heartbeats_sent++;
    } else {
        logmsg(c, "WARNING", "Heartbeat not sent: %s", why);
    }
    lws_sul_schedule(c->ctx, 0, &c->heartbeat_timer, heartbeat_due,
                     (lws_usec_t)c->opts.heartbeat_ms * LWS_US_PER_MS);
}

static void record_close(phx_client *c, const unsigned char *in, size_t len)
{
    c->close_code = len >= 2 ? (in[0] << 8) | in[1] : 0;
    size_t n = len > 2 ? len - 2 : 0;
    if (n >= sizeof c->close_reason)
        n = sizeof c->close_reason - 1;
    for (size_t i = 0; i < n; i++) /* a reason ends up in logs: printable only */
        c->close_reason[i] = in[2 + i] >= ' ' && in[2 + i] < 0x7f ? (char)in[2 + i] : '?';
    c->close_reason[n] = '\0';
}

static int on_lws_event(struct lws *wsi, enum lws_callback_reasons reason, void *user,
                        void *in, size_t len)
{
    (void)user;
    phx_client *c = lws_context_user(lws_get_context(wsi));
    if (!c || c->freeing)
        return 0;
    switch (reason) {
    case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER: {
        unsigned char **p = in, *end = *p + len;
        return lws_add_http_header_by_name(wsi, (const unsigned char *)"x-api-key:",
                                           (const unsigned char *)c->api_key,
                                           (int)strlen(c->api_key), p, end) ? -1 : 0;
    }
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
        if (c->attempt_live)
            attempt_failed(c, wsi, in ? (const char *)in : "connection failed");
        return 0;
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        on_open(c, wsi);
        return 0;
    case LWS_CALLBACK_CLIENT_RECEIVE:
        on_receive(c, wsi, in, len);
        return 0;
    case LWS_CALLBACK_CLIENT_WRITEABLE:
        return write_next(c, wsi);
    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
        record_close(c, in, len);
        return 0;
    case LWS_CALLBACK_CLIENT_CLOSED:
        if (c->state == PHX_OPEN) /* an attempt that never opened got CONNECTION_ERROR */
            connection_lost(c);
        return 0;
    default:
        return 0;
    }
}

/* ---- construction ------------------------------------------------------- */

void phx_options_init(phx_options *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->heartbeat_ms = 30000;
    opts->join_timeout_ms = 10000;
    opts->open_timeout_ms = 10000;
    opts->keepalive_s = 20;
    opts->reconnect = 1;
    opts->backoff = phx_backoff_default();
}

static err_code validate(const phx_options *o, char *err)
{
    if (!o)
        return err_set(err, ERR_USAGE, "phx_client_new: NULL options");
    if (!o->ws_url || !*o->ws_url)
        return err_set(err, ERR_USAGE, "phx_options.ws_url is required");
    if (!o->api_key || strlen(o->api_key) < 8)
        return err_set(err, ERR_USAGE, "phx_options.api_key is required (8 bytes or more)");
    if (o->heartbeat_ms <= 0 || o->join_timeout_ms <= 0 || o->open_timeout_ms <= 0)
        return err_set(err, ERR_USAGE, "phx_options: heartbeat_ms, join_timeout_ms and "
                       "open_timeout_ms must be positive (phx_options_init sets them)");
    if (o->keepalive_s < 0 || o->keepalive_s > 16000)
        return err_set(err, ERR_USAGE, "phx_options.keepalive_s must be 0..16000");
    const phx_backoff *b = &o->backoff;
    if (b->base_ms < 0 || b->cap_ms < b->base_ms || !(b->jitter >= 0 && b->jitter <= 1))
        return err_set(err, ERR_USAGE, "phx_options.backoff: need 0 <= base_ms <= cap_ms "
                       "and 0 <= jitter <= 1");
    if (b->restart_min_ms < 0 || b->restart_max_ms < b->restart_min_ms ||
        b->later_min_ms < 0 || b->later_max_ms < b->later_min_ms || b->stable_ms < 0)
        return err_set(err, ERR_USAGE, "phx_options.backoff: need 0 <= restart_min_ms <= "
                       "restart_max_ms, 0 <= later_min_ms <= later_max_ms, stable_ms >= 0");
    return ERR_OK;
}

static err_code copy_str(const char *src, char **dst, char *err)
{
    *dst = NULL;
    if (src && !(*dst = strdup(src)))
        return err_set(err, ERR_NOMEM, "out of memory copying phoenix options");
    return ERR_OK;
}

static err_code copy_options(phx_client *c, const phx_options *o, char *err)
{
    err_code rc;
    c->opts = *o;
    if ((rc = copy_str(o->ws_url, &c->ws_url, err)) ||
        (rc = copy_str(o->api_key, &c->api_key, err)) ||
        (rc = copy_str(o->agent_id, &c->agent_id, err)) ||
        (rc = copy_str(o->ca_file ? o->ca_file : config_ca_file_env(), &c->ca_file, err)))
        return rc;
    c->opts.ws_url = c->ws_url;
    c->opts.api_key = c->api_key;
    c->opts.agent_id = c->agent_id;
    c->opts.ca_file = c->ca_file;
    c->opts.proxy = NULL; /* decided once, kept in proxy_address */
    return ERR_OK;
}

/* lws takes the proxy as "[user:pass@]host" plus a port. An explicit ":0"
 * (no host, port 0) means direct, and also keeps lws from reading
 * http_proxy by itself, which would ignore no_proxy. */
static err_code setup_proxy(phx_client *c, const netenv_proxy *given, char *err)
{
    netenv_proxy px;
    if (given) {
        px = *given;
    } else {
        err_code rc = netenv_proxy_for(c->ws_url, &px, err);
        if (rc != ERR_OK)
            return rc;
    }
    if (!px.use) {
        snprintf(c->proxy_address, sizeof c->proxy_address, ":0");
        c->proxy_port = 0;
        return ERR_OK;
    }
    if (strchr(px.userinfo, '@') || px.port <= 0 || !px.host[0])
        return err_set(err, ERR_CONFIG, "the proxy for the WebSocket cannot be handed to "
                       "libwebsockets (no host/port, or '@' in its credentials)");
    int v6 = strchr(px.host, ':') != NULL;
    snprintf(c->proxy_address, sizeof c->proxy_address, "%s%s%s%s%s", px.userinfo,
             px.userinfo[0] ? "@" : "", v6 ? "[" : "", px.host, v6 ? "]" : "");
    c->proxy_port = px.port;
    return ERR_OK;
}

static err_code create_context(phx_client *c, char *err)
{
    c->keepalive.secs_since_valid_ping = (uint16_t)c->opts.keepalive_s;
    c->keepalive.secs_since_valid_hangup = (uint16_t)(2 * c->opts.keepalive_s);
    c->protocols[0] = (struct lws_protocols){PROTOCOL_NAME, on_lws_event, 0, 0, 0, NULL, 0};

    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = c->protocols;
    /* Only wss needs OpenSSL: its client context loads the whole system CA
     * bundle, and lws 4.1.6 leaks one such context when two clients'
     * contexts overlap (seen under ASan), so ws:// clients go without. */
    info.options = c->ep.tls ? LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT : 0;
    info.user = c;
    info.client_ssl_ca_filepath = c->ca_file;
    info.http_proxy_address = c->proxy_address;
    info.http_proxy_port = (unsigned)c->proxy_port;
    unsigned secs = (unsigned)((c->opts.open_timeout_ms + 999) / 1000);
    info.timeout_secs = secs;
    info.connect_timeout_secs = secs;

    lws_set_log_level(LLL_ERR | LLL_WARN, lws_emit);
    phx_client *prev = bind_lws_logs(c);
    c->ctx = lws_create_context(&info);
    unbind_lws_logs(prev);
    if (!c->ctx)
        return err_set(err, ERR_NETWORK, "cannot create the libwebsockets context%s%s",
                       c->lws_error[0] ? ": " : "", c->lws_error);
    return ERR_OK;
}

err_code phx_client_new(const phx_options *opts, phx_client **out, char *err)
{
    if (!out)
        return err_set(err, ERR_USAGE, "phx_client_new: NULL output");
    *out = NULL;
    err_code rc = validate(opts, err);
    if (rc != ERR_OK)
        return rc;
    phx_client *c = calloc(1, sizeof *c);
    if (!c)
        return err_set(err, ERR_NOMEM, "out of memory creating a phoenix client");
    c->outq_tail = &c->outq;
    c->rng = ((uint64_t)clock_mono_ms() << 20) ^ (uint64_t)(uintptr_t)c ^ 0x9e3779b97f4a7c15ULL;
    if ((rc = copy_options(c, opts, err)) == ERR_OK &&
        (rc = redact_add_secret(c->api_key)) != ERR_OK)
        err_set(err, rc, "the API key cannot be registered for redaction (%s)", err_str(rc));
    if (rc == ERR_OK)
        rc = phx_url_build(c->ws_url, c->api_key, c->agent_id, &c->ep, err);
    if (rc == ERR_OK)
        rc = setup_proxy(c, opts->proxy, err);
    if (rc == ERR_OK)
        rc = create_context(c, err);
    if (rc != ERR_OK) {
        phx_client_free(c);
        return rc;
    }
    *out = c;
    return ERR_OK;
}

static void wipe(char *s)
{
    if (!s)
        return;
    for (volatile char *p = s; *p; p++)
        *p = '\0';
}

void phx_client_free(phx_client *c)
{
    if (!c)
        return;
    c->freeing = 1;
    if (c->ctx) {
        lws_sul_cancel(&c->connect_timer);
        lws_sul_cancel(&c->heartbeat_timer);
        lws_sul_cancel(&c->wake_timer);
        for (sub *s = c->subs; s; s = s->next)
            lws_sul_cancel(&s->rejoin_timer);
        phx_client *prev = bind_lws_logs(c);
        lws_context_destroy(c->ctx);
        unbind_lws_logs(prev);
    }
    while (c->subs) {
        sub *s = c->subs;
        c->subs = s->next;
        free(s->topic);
        free(s);
    }
    drop_outq(c);
    free(c->rx);
    phx_endpoint_clear(&c->ep);
    wipe(c->api_key);
    wipe(c->proxy_address);
    free(c->ws_url);
    free(c->api_key);
    free(c->agent_id);
    free(c->ca_file);
    free(c);
}

/* ---- driving the loop --------------------------------------------------- */

static void wake_up(lws_sorted_usec_list_t *timer)
{
    (void)timer; /* only there to end lws's poll in time */
}

/* One round of lws: returns after activity, or after timeout_ms at most
 * (lws 4 waits for its next timer, so the wait is bounded by one). */
static void service_once(phx_client *c, int timeout_ms)
{
    phx_client *prev = bind_lws_logs(c);
    if (timeout_ms > 0)
        lws_sul_schedule(c->ctx, 0, &c->wake_timer, wake_up,
                         (lws_usec_t)timeout_ms * LWS_US_PER_MS);
    lws_service(c->ctx, timeout_ms > 0 ? 0 : -1);
    lws_sul_cancel(&c->wake_timer);
    unbind_lws_logs(prev);
}

/* Services until *done or the deadline; 1 when done. */
static int wait_for(phx_client *c, const int *done, int64_t deadline)
{
    while (!*done) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return 0;
        service_once(c, left < SLICE_MS ? (int)left : SLICE_MS);
    }
    return 1;
}

static err_code check_driving(const phx_client *c, const char *what, char *err)
{
    if (!c)
        return err_set(err, ERR_USAGE, "%s: NULL client", what);
    if (c->in_callback)
        return err_set(err, ERR_USAGE, "%s: not allowed inside a phoenix callback", what);
    if (c->state == PHX_IDLE)
        return err_set(err, ERR_USAGE, "%s: call phx_connect first", what);
    if (c->state == PHX_CLOSED)
        return err_set(err, ERR_CLOSED, "%s", c->final_reason);
    return ERR_OK;
}

err_code phx_connect(phx_client *c, char *err)
{
    if (!c)
        return err_set(err, ERR_USAGE, "phx_connect: NULL client");
    if (c->in_callback || c->state != PHX_IDLE)
        return err_set(err, ERR_USAGE, "phx_connect: already called, or inside a callback");
    c->state = PHX_CONNECTING;
    /* the attempt itself runs inside phx_service, like every callback */
    lws_sul_schedule(c->ctx, 0, &c->connect_timer, connect_due, 1);
    return ERR_OK;
}

err_code phx_service(phx_client *c, int timeout_ms, char *err)
{
    err_code rc = check_driving(c, "phx_service", err);
    if (rc != ERR_OK)
        return rc;
    service_once(c, timeout_ms < 0 ? 0 : timeout_ms);
    return c->state == PHX_CLOSED ? err_set(err, ERR_CLOSED, "%s", c->final_reason) : ERR_OK;
}

/* ---- joining and leaving ------------------------------------------------ */

err_code phx_join(phx_client *c, const char *topic, int timeout_ms, char *err)
{
    err_code rc = check_driving(c, "phx_join", err);
    if (rc != ERR_OK)
        return rc;
    if (!topic || !*topic)
        return err_set(err, ERR_USAGE, "phx_join: empty topic");
    if (find_sub(c, topic))
        return err_set(err, ERR_USAGE, "phx_join: %s is already joined", topic);
    int budget = timeout_ms > 0 ? timeout_ms : c->opts.join_timeout_ms;
    sub *s = add_sub(c, topic);
    if (!s)
        return err_set(err, ERR_NOMEM, "out of memory joining %s", topic);
    waiter w = {0};
    s->join_waiter = &w;
    if (c->state == PHX_OPEN && (rc = send_join(c, s, 0, err)) != ERR_OK) {
        remove_sub(c, s);
        return rc;
    }
    if (wait_for(c, &w.done, now_ms() + budget)) {
        if (w.rc == ERR_OK)
            return ERR_OK;
        /* a refusal already removed it; giving up leaves it behind */
        if ((s = find_sub(c, topic)) != NULL)
            remove_sub(c, s);
        return err_set(err, w.rc, "%s", w.reason);
    }
    int sent = s->state == SUB_JOINING;
    s->join_waiter = NULL;
    remove_sub(c, s);
    if (sent)
        return err_set(err, ERR_TIMEOUT, "join %s: no answer within %d ms", topic, budget);
    return err_set(err, ERR_TIMEOUT, "join %s: the socket did not open within %d ms%s%s",
                   topic, budget, c->last_error[0] ? "; last error: " : "", c->last_error);
}

err_code phx_leave(phx_client *c, const char *topic, int timeout_ms, char *err)
{
    err_code rc = check_driving(c, "phx_leave", err);
    if (rc != ERR_OK)
        return rc;
    sub *s = topic ? find_sub(c, topic) : NULL;
    if (!s)
        return err_set(err, ERR_NOTFOUND, "phx_leave: %s is not joined", topic ? topic : "(null)");
    int tell = c->state == PHX_OPEN && s->state != SUB_PENDING;
    char join_ref[REF_SZ], name[512];
    memcpy(join_ref, s->join_ref, REF_SZ);
    snprintf(name, sizeof name, "%s", s->topic);
    int counted = s->rejoining;
    remove_sub(c, s);
    if (counted)
        rejoin_settled(c);
    if (!tell)
        return ERR_OK;
    new_ref(c, c->leave_ref);
    if ((rc = queue_frame(c, join_ref, c->leave_ref, name, "phx_leave", err)) != ERR_OK)
        return rc;
    waiter w = {0};
    c->leave_waiter = &w;
    int budget = timeout_ms > 0 ? timeout_ms : LEAVE_TIMEOUT_MS;
    int done = wait_for(c, &w.done, now_ms() + budget);
    c->leave_waiter = NULL;
    c->leave_ref[0] = '\0';
    if (!done)
        return err_set(err, ERR_TIMEOUT, "leave %s: no answer within %d ms", name, budget);
    return w.rc == ERR_OK ? ERR_OK : err_set(err, w.rc, "%s", w.reason);
}

err_code phx_close(phx_client *c, char *err)
{
    if (!c || c->in_callback)
        return err_set(err, ERR_USAGE, "phx_close: NULL client, or inside a callback");
    if (c->state == PHX_CLOSED)
        return ERR_OK;
    c->closing = 1;
    lws_sul_cancel(&c->connect_timer);
    lws_sul_cancel(&c->heartbeat_timer);
    if (c->wsi) {
        if (c->state == PHX_OPEN)
            lws_callback_on_writable(c->wsi); /* write_next sends the 1000 */
        else
            lws_set_timeout(c->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        int64_t deadline = now_ms() + CLOSE_WAIT_MS;
        while (c->wsi && now_ms() < deadline)
            service_once(c, SLICE_MS);
    }
    c->state = PHX_CLOSED;
    snprintf(c->final_reason, sizeof c->final_reason, "closed by phx_close");
    return ERR_OK;
}

/* ---- observing ---------------------------------------------------------- */

void phx_stats_get(const phx_client *c, phx_stats *out)
{
    *out = c->stats;
    out->state = c->state;
}

phx_conn_state phx_conn_state_get(const phx_client *c)
{
    return c->state;
}

int phx_is_joined(const phx_client *c, const char *topic)
{
    const sub *s = find_sub(c, topic);
    return s && s->state == SUB_JOINED && c->state == PHX_OPEN;
}

const char *phx_join_ref(const phx_client *c, const char *topic)
{
    const sub *s = find_sub(c, topic);
    return s && s->state == SUB_JOINED ? s->join_ref : NULL;
}
