#include "agent.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "band_rest.h"
#include "clock.h"
#include "handler.h"
#include "inbox.h"
#include "link.h"
#include "phoenix.h"
#include "presence.h"
#include "sdklog.h"

#define SERVICE_SLICE_MS 200
#define REST_TIMEOUT_MS 30000L
#define REST_RETRIES 3      /* the SDK's agent-side max_retries */
#define ME_ATTEMPTS 6       /* the SDK's tries of /agent/me on 429 */
#define ME_FIRST_WAIT_MS 1000
/* Not an SDK logger: the stand-in's own notes, so nobody mistakes them. */
#define STANDIN_LOGGER "fake_agent"

typedef struct agent {
    const settings *cfg;
    const volatile sig_atomic_t *stop;
    band_client *rest;
    phx_client *phx;
    policy policy; /* the SDK's reconnect delays, for phoenix */
    band_agent_info me;
    handler handler;
    presence presence;
    inbox inbox;
    char control_topic[LINK_TOPIC_SZ];
    char rooms_topic[LINK_TOPIC_SZ];
    int link_closed;      /* closed for good (FAKE_AGENT_NO_RECONNECT, or gave up) */
    int superseded;       /* Band said another connection took over */
    unsigned dropped_seen; /* inbox drops already warned about */
    int done;             /* the run is over; result in end_rc / end_err */
    err_code end_rc;
    char end_err[ERR_BUFSZ];
} agent;

/* ---- small helpers ------------------------------------------------------ */

/* Sleeps ms, waking early for a signal. */
static void nap(const agent *a, int64_t ms)
{
    int64_t until = clock_mono_ms() + ms;
    for (int64_t left = ms; left > 0 && !*a->stop; left = until - clock_mono_ms()) {
        int64_t slice = left < SERVICE_SLICE_MS ? left : SERVICE_SLICE_MS;
        struct timespec ts = {(time_t)(slice / 1000), (long)(slice % 1000) * 1000000L};
        nanosleep(&ts, NULL); /* EINTR is a signal: the loop looks at *stop */
    }
}

static void finish(agent *a, err_code rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void finish(agent *a, err_code rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->end_err, sizeof a->end_err, fmt, ap);
    va_end(ap);
    a->end_rc = rc;
    a->done = 1;
}

/* ---- startup ------------------------------------------------------------ */

static err_code open_rest(agent *a, char *err)
{
    band_options o = band_options_default();
    o.timeout_ms = REST_TIMEOUT_MS;
    o.max_retries = REST_RETRIES;
    o.retry_creates = 1; /* the SDK's agent side accepts a possible duplicate */
    return band_client_new(a->cfg->rest_url, a->cfg->api_key, &o, &a->rest, err);
}

/* GET /agent/me, tried again on 429 like the SDK's metadata fetch. */
static err_code fetch_identity(agent *a, char *err)
{
    int64_t wait_ms = ME_FIRST_WAIT_MS;
    for (int attempt = 1;; attempt++, wait_ms *= 2) {
        err_code rc = band_agent_me(a->rest, &a->me, err);
        if (rc != ERR_HTTP || band_last_status(a->rest) != 429 || attempt == ME_ATTEMPTS)
            return rc;
        sdklog_warning(SDKLOG_AGENT, "Rate limited fetching metadata for agent %s; retrying "
                       "in %.1fs (attempt %d/%d)", a->cfg->agent_id, (double)wait_ms / 1000.0,
                       attempt, ME_ATTEMPTS);
        nap(a, wait_ms);
        if (*a->stop)
            return rc;
    }
}

static err_code check_identity(const agent *a, char *err)
{
    if (!a->me.description[0])
        return err_set(err, ERR_CONFIG, "Agent %s has no description", a->cfg->agent_id);
    return ERR_OK;
}

static err_code join_own_topics(agent *a, char *err)
{
    link_topic(a->control_topic, "agent_control", a->cfg->agent_id);
    link_topic(a->rooms_topic, "agent_rooms", a->cfg->agent_id);
    err_code rc = link_join(a->phx, a->control_topic, 1, err);
    if (rc != ERR_OK)
        return rc;
    sdklog_info(SDKLOG_LINK, "Connected to platform");
    return link_join(a->phx, a->rooms_topic, 1, err);
}

static err_code start(agent *a, char *err)
{
    err_code rc = open_rest(a, err);
    if (rc != ERR_OK)
        return rc;
    handler_init(&a->handler, a->rest, a->cfg->agent_id);
    if ((rc = fetch_identity(a, err)) ||
        (rc = check_identity(a, err)) || (rc = link_open(a->cfg, &a->inbox, &a->policy, &a->phx, err)))
        return rc;
    presence_init(&a->presence, a->phx, a->rest, &a->handler, a->stop);
    if ((rc = link_await_open(a->phx, a->stop, err)) || (rc = join_own_topics(a, err)) ||
        (rc = presence_start(&a->presence, err)))
        return rc;
    if (*a->stop)
        return ERR_OK; /* the loop shuts down at once; no readiness to claim */
    sdklog_info(SDKLOG_AGENT, "Agent started: %s (band-sdk %s)", a->me.name, AGENT_SDK_VERSION);
    return ERR_OK;
}

/* ---- reacting to the link ---------------------------------------------- */

static void on_disconnected(agent *a, const inbox_item *it)
{
    int clean = phx_close_classify(it->close_code) == PHX_CLOSE_FINAL;
    if (a->superseded)
        sdklog_warning(SDKLOG_LINK, "WebSocket disconnected after terminal platform reason: "
                       "superseded");
    else
        sdklog_warning(SDKLOG_LINK, "WebSocket disconnected: %s", clean ? "None" : it->reason);
    if (!a->cfg->no_reconnect || clean)
        return; /* a final close is PHX_GAVE_UP's to handle */
    char err[ERR_BUFSZ];
    (void)phx_close(a->phx, err); /* ERR_OK or already closed: either way closed */
    a->link_closed = 1;
    sdklog_info(STANDIN_LOGGER, "FAKE_AGENT_NO_RECONNECT=1: staying disconnected");
}

/* The SDK logs each rejoined topic, in join order: its own, then the rooms'. */
static void log_rejoined(const agent *a)
{
    const char *own[] = {a->control_topic, a->rooms_topic};
    for (size_t i = 0; i < 2; i++)
        if (phx_is_joined(a->phx, own[i]))
            sdklog_info(SDKLOG_PHOENIX, "Successfully subscribed to topic %s", own[i]);
    presence_log_rejoined(&a->presence);
}

static void on_reconnected(agent *a)
{
    log_rejoined(a);
    sdklog_info(SDKLOG_LINK, "WebSocket reconnected \u2014 reconciling room state");
    sdklog_info(SDKLOG_PRESENCE, "Handling reconnection \u2014 syncing rooms from API");
    presence_reconnected(&a->presence);
}

/* A room's topic is the room's business; losing agent_control or
 * agent_rooms leaves an agent that can no longer hear Band, so the run
 * ends. */
static void on_rejoin_failed(agent *a, const inbox_item *it)
{
    sdklog_error(SDKLOG_PHOENIX, "Failed to rejoin topic %s: %s", it->topic, it->reason);
    if (!presence_drop_topic(&a->presence, it->topic))
        finish(a, ERR_CLOSED, "Band refused to rejoin %s: %s", it->topic, it->reason);
}

static void on_gave_up(agent *a, const inbox_item *it)
{
    switch (phx_close_classify(it->close_code)) {
    case PHX_CLOSE_FINAL:
        sdklog_info(SDKLOG_PHOENIX, "%s", it->reason);
        finish(a, ERR_OK, "%s", it->reason);
        return;
    case PHX_CLOSE_TERMINAL:
        sdklog_error(SDKLOG_PHOENIX, "%s", it->reason);
        finish(a, ERR_CLOSED, "%s", it->reason);
        return;
    case PHX_CLOSE_RETRY:
        sdklog_error(SDKLOG_LINK, "WebSocket will not reconnect: %s", it->reason);
        finish(a, ERR_CLOSED, "%s", it->reason);
        return;
    }
}

static void on_state(agent *a, const inbox_item *it)
{
    switch (it->state) {
    case PHX_CONNECTED: /* startup logged its own lines */
        return;
    case PHX_DISCONNECTED:
        on_disconnected(a, it);
        return;
    case PHX_RECONNECTED:
        on_reconnected(a);
        return;
    case PHX_REJOIN_FAILED:
        on_rejoin_failed(a, it);
        return;
    case PHX_GAVE_UP:
        on_gave_up(a, it);
        return;
    }
}

/* ---- reacting to pushes -------------------------------------------------- */

static const char *payload_str(const cJSON *payload, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(payload, name);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static void on_control(agent *a, const inbox_item *it)
{
    if (strcmp(it->event, "supersede") != 0)
        return; /* agent.control (interrupt/stop/play) has no meaning for a smoke agent */
    const char *reason = payload_str(it->payload, "reason");
    const char *correlation = payload_str(it->payload, "correlation_id");
    const cJSON *retryable = cJSON_GetObjectItemCaseSensitive(it->payload, "retryable");
    a->superseded = 1;
    sdklog_warning(SDKLOG_LINK, "WebSocket connection superseded: reason=%s retryable=%s "
                   "correlation_id=%s", reason ? reason : "None",
                   sdklog_bool(cJSON_IsTrue(retryable)), correlation ? correlation : "None");
}

static void on_rooms_event(agent *a, const inbox_item *it)
{
    const char *id = payload_str(it->payload, "id");
    if (!id)
        return;
    if (strcmp(it->event, "room_added") == 0)
        presence_enter(&a->presence, id);
    else if (strcmp(it->event, "room_removed") == 0)
        presence_leave(&a->presence, id);
}

static void on_push(agent *a, const inbox_item *it)
{
    if (strcmp(it->event, "phx_error") == 0 || strcmp(it->event, "phx_close") == 0)
        sdklog_warning(SDKLOG_STREAMING, "[WebSocket] Received event '%s' but no handler "
                       "registered", it->event);
    else if (strcmp(it->topic, a->control_topic) == 0)
        on_control(a, it);
    else if (strcmp(it->topic, a->rooms_topic) == 0)
        on_rooms_event(a, it);
    else
        (void)presence_on_push(&a->presence, it->topic, it->event, it->payload);
}

/* ---- the loop ------------------------------------------------------------ */

static void drain_inbox(agent *a)
{
    inbox_item *it;
    while (!a->done && !*a->stop && (it = inbox_pop(&a->inbox)) != NULL) {
        if (it->kind == INBOX_STATE)
            on_state(a, it);
        else
            on_push(a, it);
        inbox_item_free(it);
    }
    if (a->inbox.dropped > a->dropped_seen) {
        sdklog_warning(SDKLOG_STREAMING, "[WebSocket] %u pushes dropped (queue full or out "
                       "of memory)", a->inbox.dropped - a->dropped_seen);
        a->dropped_seen = a->inbox.dropped;
    }
    if (a->inbox.lost_states && !a->done)
        finish(a, ERR_NOMEM, "out of memory: a WebSocket state change was lost");
}

/* Waits for network activity, or just time once the link is closed. */
static void wait_for_events(agent *a)
{
    if (a->link_closed) {
        nap(a, SERVICE_SLICE_MS);
        return;
    }
    char err[ERR_BUFSZ];
    if (phx_service(a->phx, SERVICE_SLICE_MS, err) == ERR_CLOSED)
        a->link_closed = 1; /* its PHX_GAVE_UP is in the inbox already */
}

static void shut_down(agent *a)
{
    char err[ERR_BUFSZ];
    sdklog_info(SDKLOG_AGENT, "Event loop shutting down! reason=Signal received");
    if (a->phx)
        (void)phx_close(a->phx, err); /* ERR_OK, or closed already */
}

static err_code run_loop(agent *a, char *err)
{
    while (!a->done && !*a->stop) {
        wait_for_events(a);
        drain_inbox(a);
        if (!a->done)
            presence_poll_idle(&a->presence);
    }
    if (!a->done)
        shut_down(a);
    else if (a->end_rc != ERR_OK)
        return err_set(err, a->end_rc, "%s", a->end_err);
    return ERR_OK;
}

err_code agent_run(const settings *s, const volatile sig_atomic_t *stop, char *err)
{
    agent a;
    memset(&a, 0, sizeof a);
    a.cfg = s;
    policy_init(&a.policy, (unsigned)clock_mono_ms() ^ (unsigned)getpid());
    a.stop = stop;
    inbox_init(&a.inbox);
    err_code rc = start(&a, err);
    if (rc == ERR_OK) {
        rc = run_loop(&a, err);
    } else if (*stop) {
        shut_down(&a); /* a signal cut the startup short: a clean end */
        rc = ERR_OK;
    }
    phx_client_free(a.phx);
    band_client_free(a.rest);
    presence_free(&a.presence);
    handler_free(&a.handler);
    inbox_clear(&a.inbox);
    return rc;
}
