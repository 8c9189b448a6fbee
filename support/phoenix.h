/* phoenix: a Phoenix Channels v2 client over libwebsockets, for Band.
 *
 * One phx_client is one logical socket to Band (band-protocol.md sections
 * 5 and 8): it connects, joins topics, delivers pushes, sends heartbeats,
 * and when the connection drops it reconnects with backoff and rejoins
 * every topic, the way the Python SDK does. The two users are the C
 * stand-in for the SDK agent (long-lived, reconnects, logs the SDK's
 * disconnect/reconnect lines from on_state) and the probe (joins one room,
 * waits for two pushes under a deadline, fails cleanly if the socket
 * drops).
 *
 * The agent stand-in:
 *   phx_options o;
 *   phx_options_init(&o);
 *   o.ws_url = ws_url; o.api_key = key; o.agent_id = id; o.log = agent_log;
 *   o.on_push = on_push; o.on_state = on_state; o.ud = agent;
 *   phx_client_new(&o, &c, err); phx_connect(c, err);
 *   phx_join(c, "agent_control:<id>", 0, err);   then agent_rooms:<id>, and
 *   per room chat_room:<room>, room_participants:<room>
 *   while (running && phx_service(c, 200, err) == ERR_OK)
 *       do what the callbacks queued (REST replies, room reconciliation);
 *   on_state: PHX_DISCONNECTED -> "WebSocket disconnected: <info->reason>",
 *             PHX_RECONNECTED  -> "WebSocket reconnected — reconciling room
 *             state", PHX_GAVE_UP -> stop.
 *
 * The probe:
 *   o.reconnect = 0;            a drop mid-probe is a failure, not a wait
 *   phx_client_new, phx_connect, phx_join(c, "chat_room:<room>", 0, err);
 *   POST the marker message over REST, then
 *   while (!(processed && replied)) {
 *       if (now >= deadline) fail with what is missing;
 *       if (phx_service(c, 200, err) != ERR_OK) fail with err (ERR_CLOSED:
 *           the socket dropped, the reason says how);
 *   }
 *   on_push: message_updated -> merge metadata.delivery_status;
 *            message_created with sender_type Agent -> keep the reply.
 *   phx_leave(c, topic, 0, err); phx_close(c, err); phx_client_free(c);
 *
 * Lifetime. phx_client_new copies every string option and the proxy
 * decision; opts.log and opts.ud are borrowed and must outlive the client.
 * phx_client_free closes the socket and frees everything (no callbacks run
 * during it). Nothing else is allocated on the caller's behalf.
 *
 * Threading. Single-threaded and driven by the caller: nothing happens
 * unless the caller is inside phx_service, phx_join, phx_leave or
 * phx_close, and callbacks run only there, on the caller's thread.
 * Different clients may live on different threads.
 *
 * Reentrancy. Inside on_push / on_state you may call phx_stats_get,
 * phx_conn_state_get, phx_is_joined and phx_join_ref. phx_service,
 * phx_join, phx_leave and phx_close return ERR_USAGE there (they would
 * re-enter the event loop): note what to do and act after the call that
 * ran the callback returns. Never call phx_client_free from a callback.
 *
 * Time. Every call is bounded: phx_service by its timeout, phx_join and
 * phx_leave by theirs, phx_close by 2 s. A connection attempt is bounded
 * by open_timeout_ms; a silent established link is dropped after
 * 2 x keepalive_s without a pong (WebSocket ping, as the SDK's 20 s/20 s).
 * One exception: this lws build resolves names synchronously (no async
 * DNS), so a lookup inside an attempt is bounded only by the resolver.
 *
 * Refs. One counter per client, never reset on reconnect ("1", "2", ...),
 * shared by joins, leaves and heartbeats. Pushes are accepted when their
 * join_ref is the topic's current join_ref or null (section 5.2 and 11:
 * the platform's docs and the SDK disagree, so both are accepted).
 * Heartbeats go on topic "phoenix" every heartbeat_ms; a missing reply
 * only logs a warning before the next beat, as in the SDK.
 *
 * Reconnect (section 8.2). No close frame, 1011, 1012, 1013 and unknown
 * codes reconnect after phx_backoff_delay_ms; 1000/1001 end the client
 * (PHX_GAVE_UP, ERR_CLOSED from then on); 1008 too, as a terminal error.
 * libwebsockets 4.1.6 rewrites a received 1012, 1013 or 1014 to 1002
 * before anyone sees it (the reason text survives), so close_code reports
 * 1002 for them and the reconnect delay treats 1002 as 1012 (>= U(1,5) s);
 * the 1013 floor of 30-60 s cannot be honoured.
 * After a reconnect every still-joined topic is rejoined in the order it
 * was first joined, with new join_refs; a rejoin refused by the server
 * drops that topic (PHX_REJOIN_FAILED), a rejoin that times out is retried
 * on the next reconnect. PHX_RECONNECTED comes once every rejoin has an
 * answer. The backoff attempt count restarts after a connection that
 * lived at least backoff.stable_ms (60 s). Every reconnect duration is an
 * option (heartbeat_ms, keepalive_s, backoff.*), so a test or a rehearsal
 * can run this logic compressed.
 *
 * Secrets. api_key is registered with redact at phx_client_new and goes
 * both in the query (api_key=) and the x-api-key header. Every log line,
 * including libwebsockets' own, passes through redact.
 *
 * Logging. With opts.log set, lines like the SDK's:
 *   "2026-12-02 11:46:20,123 INFO phx: Successfully subscribed to topic T"
 * (UTC). libwebsockets' warnings and errors go to the same file as
 * "... WARNING lws: ..." / "... ERROR lws: ...". lws's log hook is
 * process-wide and has no user pointer, so phoenix installs one emitter
 * (lws_set_log_level) that finds the client being serviced on the current
 * thread through a thread-local pointer; lws lines emitted outside any
 * client go to stderr, redacted. phx_client_new (re)installs it with
 * lws_set_log_level(LLL_ERR | LLL_WARN): a process using lws for anything
 * else shares that setting. The last lws error is also kept for
 * error messages: OpenSSL 3's own connect error text says nothing, the
 * lws ERR line before it says "unable to get local issuer certificate".
 *
 * Proxy. By default netenv_proxy_for(ws_url) decides (https_proxy etc.
 * with no_proxy honoured); the answer is handed to lws explicitly, which
 * also stops lws from reading http_proxy itself. Credentials go as Basic
 * proxy authorization (an '@' in them cannot be passed to lws: ERR_CONFIG).
 * The proxy must answer CONNECT with "HTTP/1.x 200 <reason>" (lws rejects
 * a bare "200"), for ws:// and wss:// alike.
 */
#ifndef SMOKE_PHOENIX_H
#define SMOKE_PHOENIX_H

#include <stdio.h>

#include <cJSON.h>

#include "err.h"
#include "netenv.h"
#include "phx_backoff.h"

typedef struct phx_client phx_client;

typedef enum phx_event {
    PHX_CONNECTED,     /* the first connection is open */
    PHX_DISCONNECTED,  /* an open connection was lost (close_code, reason) */
    PHX_RECONNECTED,   /* open again and every topic has a rejoin answer */
    PHX_REJOIN_FAILED, /* the server refused to rejoin `topic`; it is dropped */
    PHX_GAVE_UP,       /* no more connections: final/terminal close code,
                          reconnect off, or max_attempts failed attempts */
} phx_event;

typedef struct phx_state_info {
    phx_event event;
    unsigned generation; /* connections opened so far (1 = the first) */
    int close_code;      /* DISCONNECTED / GAVE_UP: code received, 0 = none */
    const char *reason;  /* never NULL: close reason, error text, or "" */
    const char *topic;   /* PHX_REJOIN_FAILED only; NULL otherwise */
} phx_state_info;

/* A push on a joined topic: any event but phx_reply (phx_error and
 * phx_close included). Strings and payload are valid during the call only;
 * copy what you keep (cJSON_Duplicate). */
typedef void (*phx_push_fn)(const char *topic, const char *event,
                            const cJSON *payload, void *ud);

/* A change of connection state; info is valid during the call only. */
typedef void (*phx_state_fn)(const phx_state_info *info, void *ud);

typedef struct phx_options {
    const char *ws_url;     /* required: ws:// or wss:// (BAND_WS_URL) */
    const char *api_key;    /* required, secret, at least 8 bytes */
    const char *agent_id;   /* NULL or "" for a user; else &agent_id= */
    int heartbeat_ms;       /* default 30000; first beat one interval in */
    int join_timeout_ms;    /* default 10000; phx_join with 0, and rejoins */
    int open_timeout_ms;    /* default 10000; connect + TLS + upgrade */
    int keepalive_s;        /* default 20; WebSocket ping when idle this
                               long, drop after twice as long; 0 = never */
    int reconnect;          /* default 1; 0 = a lost connection is final */
    unsigned max_attempts;  /* default 0 = unlimited; else give up after
                               this many failed connection attempts in a
                               row (the SDK's initial connect: 11) */
    phx_backoff backoff;    /* default phx_backoff_default() */
    /* Optional: the delay (ms) before the next attempt, in place of
     * backoff's `suggested_ms`, for a caller that models a fuller policy
     * (the SDK's rapid-disconnect minimums and hold-down; the C stand-in
     * agent). uptime_ms: how long the lost connection lived, 0 for a
     * failed attempt; generation: connections opened so far (0 = still
     * the initial connect); code: the close code (0 = none). Gets retry_ud. */
    int64_t (*retry_delay)(void *retry_ud, unsigned generation, int code, int64_t uptime_ms,
                           int64_t suggested_ms);
    void *retry_ud;
    const char *ca_file;    /* optional PEM, added to the system CAs; NULL =
                               SMOKE_CA_FILE when set (config_ca_file_env) */
    const netenv_proxy *proxy; /* NULL (default) = netenv_proxy_for(ws_url);
                                  else this decision (use = 0: direct) */
    FILE *log;              /* optional; see Logging above */
    phx_push_fn on_push;    /* optional */
    phx_state_fn on_state;  /* optional */
    void *ud;               /* handed back to both callbacks */
} phx_options;

typedef enum phx_conn_state {
    PHX_IDLE,       /* phx_connect not called yet */
    PHX_CONNECTING, /* an attempt is under way */
    PHX_OPEN,       /* connected (rejoins may still be in flight) */
    PHX_WAITING,    /* between attempts, backing off */
    PHX_CLOSED,     /* for good: phx_close or PHX_GAVE_UP */
} phx_conn_state;

typedef struct phx_stats {
    phx_conn_state state;
    unsigned generation;        /* connections opened so far */
    unsigned disconnects;       /* open connections lost */
    unsigned connect_failures;  /* attempts that never opened */
    unsigned heartbeats_sent;
    unsigned heartbeat_replies;
    unsigned pushes;            /* handed to on_push */
    unsigned frames_rejected;   /* malformed frames dropped */
    int last_close_code;        /* of the last lost connection; 0 = none */
} phx_stats;

/* Fills *opts with the defaults above and every pointer NULL. */
void phx_options_init(phx_options *opts);

/* Validates and copies opts, registers the key with redact, decides the
 * proxy and creates the lws context. No connection yet. ERR_USAGE for a
 * missing or invalid option (message names the field), ERR_CONFIG for a
 * bad ws_url or proxy variable (named, never quoted), ERR_NOMEM, ERR_FULL
 * (the redact registry is full), ERR_NETWORK when lws cannot create its
 * context (message carries lws's error, e.g. an unreadable ca_file).
 * *out is NULL on failure. */
err_code phx_client_new(const phx_options *opts, phx_client **out, char *err);

/* Closes without waiting, runs no callbacks, frees everything. NULL-safe. */
void phx_client_free(phx_client *c);

/* Starts connecting; returns at once (the attempt runs in phx_service).
 * ERR_USAGE if called twice or from a callback. */
err_code phx_connect(phx_client *c, char *err);

/* Runs the event loop once: waits up to timeout_ms (0 = only what is
 * ready) for network activity or a timer, handles it, returns. ERR_OK
 * while the client is alive (also while it is reconnecting); ERR_CLOSED
 * once it is closed for good, with the reason; ERR_USAGE from a callback
 * or before phx_connect. */
err_code phx_service(phx_client *c, int timeout_ms, char *err);

/* Joins `topic` and services the loop until the server answers or
 * timeout_ms passes (0 = opts.join_timeout_ms); waits for the connection
 * first if it is not open yet. ERR_OK: joined; pushes flow to on_push and
 * the topic is rejoined after reconnects. ERR_PROTOCOL: refused, with the
 * server's reason ("unauthorized"). ERR_TIMEOUT: no answer in time (the
 * message says whether the socket was even open, and why not). ERR_CLOSED:
 * the client closed for good meanwhile. ERR_USAGE: already joined, empty
 * topic, not connecting (call phx_connect first), or from a callback.
 * On any failure the topic is not joined. */
err_code phx_join(phx_client *c, const char *topic, int timeout_ms, char *err);

/* Leaves a joined topic: stops its pushes and rejoins at once, then, if
 * the socket is open, sends phx_leave and waits up to timeout_ms (0 =
 * 5000) for the answer. ERR_OK also when the socket was not open (nothing
 * to tell the server). ERR_NOTFOUND: not joined. ERR_TIMEOUT, ERR_PROTOCOL
 * (refused, with the reason), ERR_NETWORK (the socket dropped meanwhile):
 * the topic is left on our side all the same. ERR_CLOSED: the client is
 * closed for good (nothing left). ERR_USAGE from a callback. */
err_code phx_leave(phx_client *c, const char *topic, int timeout_ms, char *err);

/* Closes the socket with 1000 and ends the client for good (no reconnect,
 * no callbacks); waits at most 2 s for the close to go out. ERR_OK also
 * when already closed; ERR_USAGE from a callback. */
err_code phx_close(phx_client *c, char *err);

/* Counters and state, for evidence and tests. */
void phx_stats_get(const phx_client *c, phx_stats *out);
phx_conn_state phx_conn_state_get(const phx_client *c);

/* 1 when `topic` is joined on the open connection right now (its join or
 * rejoin was answered ok), else 0. */
int phx_is_joined(const phx_client *c, const char *topic);

/* The join_ref of the topic's current subscription, or NULL when it has
 * none (not joined, or waiting for a reconnect). Valid until the next
 * call that services the loop. */
const char *phx_join_ref(const phx_client *c, const char *topic);

#endif
