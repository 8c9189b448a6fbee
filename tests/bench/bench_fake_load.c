/* bench-fake-load: the fake Band serving 100 concurrent clients.
 *
 *   bench-fake-load [-a AGENTS] [-w WORKERS] [-t SECONDS]
 *
 * AGENTS (default 50) registered agents, each in a room of its own with a
 * user observer: 2 x AGENTS Phoenix clients open at once (each agent's
 * socket with its agent_id and each observer's joined to chat_room:<room>).
 * Then every observer's user posts a marker over REST, every agent answers
 * it over REST when its push arrives (mark processing, reply
 * "sandbox-ack:<token>", mark processed), and every observer waits for the
 * reply and the processed status. Then everything is closed and deleted and
 * the fake must hold no live agent and no live room.
 *
 * Why WORKERS processes (default 2): redact's registry is process-wide and
 * holds REDACT_MAX_SECRETS (32) keys, and every agent key is registered the
 * moment it is minted (band_register_agent, phx_client_new), so one process
 * can drive at most 31 agents besides the user key. 100 lws contexts in one
 * process would be no problem otherwise (about 3 descriptors each). Each
 * worker drives its share of the clients in one single-threaded loop:
 * phx_service(c, 0) across all of them, agent replies after each sweep,
 * 1 ms naps. The workers meet at a barrier once every socket is joined, so
 * all 100 are open at the same time (the fake's own ws_connections count
 * is read there), and start sending together.
 *
 * Output: key=value lines (clients connected, joins, markers, deliveries,
 * replies, errors, times, the fake's stats and its peak RSS). Exit 0 only
 * with no error, every count complete and nothing left on the fake.
 * Every wait is bounded by -t (default 60 s per stage). Loopback only.
 */
#include <curl/curl.h>
#include <errno.h>
#include <openssl/rand.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "band_rest.h"
#include "clock.h"
#include "err.h"
#include "phoenix.h"
#include "redact.h"
#include "tk.h"
#include "tk_band.h"

#define DEFAULT_AGENTS 50
#define DEFAULT_WORKERS 2
#define MAX_WORKERS 8
#define DEFAULT_STAGE_S 60
/* One registry slot is the user's key; the rest can be agents' (see above). */
#define AGENTS_PER_WORKER_MAX (REDACT_MAX_SECRETS - 1)
#define JOIN_TIMEOUT_MS 5000
#define CLEANUP_GRACE_MS 30000 /* deletes and closes after the last stage */
#define SETTLE_MS 3000         /* the fake noticing closed sockets */
#define WANT_NOFILE 4096
#define TOKEN_BYTES 6
#define ACK_PREFIX "sandbox-ack:"

enum { STAGE_JOINED = 1, STAGE_DONE = 2 };

/* What a worker tells the parent, once per stage; one pipe write, so it
 * must stay under PIPE_BUF to arrive whole. */
typedef struct load_report {
    int worker, stage;
    int agents;           /* registered */
    int rooms;            /* created, with the agent in them */
    int clients_open;     /* sockets open before the joins */
    int joins_ok;
    int markers_sent;
    int delivered;        /* marker pushes the agents received */
    int answered;         /* REST replies the agents made */
    int replies_seen;     /* the right ack, seen by the observer */
    int processed_seen;   /* "processed" seen by the observer */
    int rooms_deleted, agents_deleted;
    int errors;
    long peak_rss_kb;
    int nlat;
    int32_t lat_ms[AGENTS_PER_WORKER_MAX]; /* marker sent -> reply seen */
    char first_error[256];
} load_report;

_Static_assert(sizeof(load_report) <= 4096, "a report must fit one atomic pipe write");

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- a worker -------------------------------------------------------------- */

typedef struct worker worker;

typedef struct pair {
    worker *w;
    int index;
    band_new_agent agent;
    char room[BAND_ID_SZ];
    char topic[BAND_ID_SZ + 16];
    band_client *rest;        /* the agent's own REST client */
    phx_client *agent_ws;
    phx_client *user_ws;
    char token[2 * TOKEN_BYTES + 1];
    char marker_id[BAND_ID_SZ];
    int64_t sent_ms;
    /* the agent's side: the marker its push brought, until answered */
    char inbox_id[BAND_ID_SZ];
    char inbox_token[2 * TOKEN_BYTES + 1];
    /* the observer's side */
    int replied, processed;
    int64_t replied_ms;
} pair;

struct worker {
    const tk_band *band;
    int n;
    band_client *user;
    band_profile me;
    pair *pairs;
    load_report rep;
};

/* Counts an error; the first one is kept (redacted) for the report. */
static void fail(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(worker *w, const char *fmt, ...)
{
    w->rep.errors++;
    if (w->rep.first_error[0])
        return;
    char text[ERR_BUFSZ];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    redact_into(text, w->rep.first_error, sizeof w->rep.first_error);
}

static int64_t deadline_in(int seconds)
{
    return clock_mono_ms() + (int64_t)seconds * 1000;
}

/* ---- what the sockets hear --------------------------------------------------- */

/* The agent keeps the marker a user sent it; it answers after the sweep
 * (REST from inside a callback would stall every other socket's turn). */
static void agent_heard(const char *topic, const char *event, const cJSON *payload, void *ud)
{
    pair *p = ud;
    if (strcmp(topic, p->topic) != 0 || strcmp(event, "message_created") != 0)
        return;
    band_message m;
    char why[ERR_BUFSZ];
    if (band_message_from_json(payload, &m, why) != ERR_OK)
        fail(p->w, "agent %d: a message push it cannot read: %s", p->index, why);
    else if (strcmp(m.sender_type, "User") == 0) {
        const char *token = strstr(m.content, "marker:");
        if (!token || strlen(token + 7) < 2 * TOKEN_BYTES)
            fail(p->w, "agent %d: a user message without a marker", p->index);
        else if (p->inbox_id[0])
            fail(p->w, "agent %d: a second marker before the first was answered", p->index);
        else {
            snprintf(p->inbox_id, sizeof p->inbox_id, "%s", m.id);
            snprintf(p->inbox_token, sizeof p->inbox_token, "%.*s", 2 * TOKEN_BYTES, token + 7);
            p->w->rep.delivered++;
        }
    }
    band_message_clear(&m);
}

static void observer_saw_message(pair *p, const cJSON *payload)
{
    band_message m;
    char why[ERR_BUFSZ], ack[sizeof ACK_PREFIX + 2 * TOKEN_BYTES];
    if (band_message_from_json(payload, &m, why) != ERR_OK)
        fail(p->w, "observer %d: a message push it cannot read: %s", p->index, why);
    else if (strcmp(m.sender_type, "Agent") == 0 && strcmp(m.sender_id, p->agent.id) == 0) {
        snprintf(ack, sizeof ack, "%s%s", ACK_PREFIX, p->token);
        if (!strstr(m.content, ack))
            fail(p->w, "observer %d: the agent's reply lacks %s", p->index, ack);
        else if (!p->replied++) {
            p->replied_ms = clock_mono_ms();
            p->w->rep.replies_seen++;
        }
    }
    band_message_clear(&m);
}

/* message_updated: the marker's delivery status for this pair's agent. */
static void observer_saw_update(pair *p, const cJSON *payload)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(payload, "id");
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(payload, "metadata");
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(meta, "delivery_status");
    const cJSON *mine = cJSON_GetObjectItemCaseSensitive(all, p->agent.id);
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(mine, "status");
    if (!cJSON_IsString(id) || strcmp(id->valuestring, p->marker_id) != 0 ||
        !cJSON_IsString(status))
        return;
    if (strcmp(status->valuestring, "failed") == 0)
        fail(p->w, "observer %d: the marker's delivery failed", p->index);
    else if (strcmp(status->valuestring, "processed") == 0 && !p->processed++)
        p->w->rep.processed_seen++;
}

static void observer_heard(const char *topic, const char *event, const cJSON *payload, void *ud)
{
    pair *p = ud;
    if (strcmp(topic, p->topic) != 0)
        return;
    if (strcmp(event, "message_created") == 0)
        observer_saw_message(p, payload);
    else if (strcmp(event, "message_updated") == 0)
        observer_saw_update(p, payload);
    else if (strcmp(event, "phx_close") == 0 || strcmp(event, "phx_error") == 0)
        fail(p->w, "observer %d: the server sent %s on %s", p->index, event, topic);
}

/* Reconnect is off: any lost socket is an error of this load. */
static void agent_state(const phx_state_info *info, void *ud)
{
    pair *p = ud;
    if (info->event == PHX_DISCONNECTED || info->event == PHX_GAVE_UP)
        fail(p->w, "agent %d's socket dropped: %s", p->index, info->reason);
}

static void observer_state(const phx_state_info *info, void *ud)
{
    pair *p = ud;
    if (info->event == PHX_DISCONNECTED || info->event == PHX_GAVE_UP)
        fail(p->w, "observer %d's socket dropped: %s", p->index, info->reason);
}

/* ---- setup -------------------------------------------------------------- */

/* An agent, its room with it as a member, and its own REST client. */
static void provision_pair(worker *w, pair *p, int worker_id)
{
    char err[ERR_BUFSZ], name[BAND_NAME_SZ];
    snprintf(name, sizeof name, "bench-load-%d-w%d-%d", (int)getppid(), worker_id, p->index);
    err_code rc = band_register_agent(w->user, name, "bench-fake-load agent", &p->agent, err);
    if (p->agent.id[0])
        w->rep.agents++; /* exists, so it is deleted at the end whatever came next */
    if (rc == ERR_OK)
        rc = band_create_chat(w->user, name, p->room, err);
    if (rc == ERR_OK)
        rc = band_add_participant(w->user, p->room, p->agent.id, "member", err);
    if (rc == ERR_OK)
        rc = band_client_new(w->band->rest_url, p->agent.api_key, NULL, &p->rest, err);
    if (rc == ERR_OK)
        w->rep.rooms++;
    else
        fail(w, "provisioning pair %d: %s", p->index, err);
    snprintf(p->topic, sizeof p->topic, "chat_room:%s", p->room);
}

static phx_client *open_socket(worker *w, pair *p, const char *key, const char *agent_id)
{
    phx_options o;
    phx_options_init(&o);
    o.ws_url = w->band->ws_url;
    o.api_key = key;
    o.agent_id = agent_id;
    o.reconnect = 0;
    o.on_push = agent_id ? agent_heard : observer_heard;
    o.on_state = agent_id ? agent_state : observer_state;
    o.ud = p;
    phx_client *c = NULL;
    char err[ERR_BUFSZ];
    err_code rc = phx_client_new(&o, &c, err);
    if (rc == ERR_OK)
        rc = phx_connect(c, err);
    if (rc != ERR_OK) {
        fail(w, "%s %d: %s", agent_id ? "agent" : "observer", p->index, err);
        phx_client_free(c);
        return NULL;
    }
    return c;
}

/* One turn of every socket that exists; returns how many are open. */
static int sweep(worker *w)
{
    int open = 0;
    char err[ERR_BUFSZ];
    for (int i = 0; i < w->n; i++) {
        phx_client *both[2] = {w->pairs[i].agent_ws, w->pairs[i].user_ws};
        for (int k = 0; k < 2; k++) {
            if (!both[k])
                continue;
            phx_service(both[k], 0, err); /* a closed socket is reported by on_state */
            open += phx_conn_state_get(both[k]) == PHX_OPEN;
        }
    }
    return open;
}

static int sockets_wanted(const worker *w)
{
    int n = 0;
    for (int i = 0; i < w->n; i++)
        n += (w->pairs[i].agent_ws != NULL) + (w->pairs[i].user_ws != NULL);
    return n;
}

/* Every socket connects at once; they are all serviced until open. */
static void connect_all(worker *w, int stage_s)
{
    for (int i = 0; i < w->n; i++) {
        pair *p = &w->pairs[i];
        if (!p->rest)
            continue;
        p->agent_ws = open_socket(w, p, p->agent.api_key, p->agent.id);
        p->user_ws = open_socket(w, p, w->band->user_key, NULL);
    }
    int want = sockets_wanted(w), open = 0;
    int64_t end = deadline_in(stage_s);
    while ((open = sweep(w)) < want && clock_mono_ms() < end)
        nap_ms(1);
    w->rep.clients_open = open;
    if (open < want)
        fail(w, "only %d of %d sockets opened within %d s", open, want, stage_s);
}

static void join_one(worker *w, pair *p, phx_client *c, const char *who)
{
    char err[ERR_BUFSZ];
    if (!c || phx_conn_state_get(c) != PHX_OPEN)
        return;
    if (phx_join(c, p->topic, JOIN_TIMEOUT_MS, err) == ERR_OK)
        w->rep.joins_ok++;
    else
        fail(w, "%s %d joining %s: %s", who, p->index, p->topic, err);
}

static void join_all(worker *w)
{
    for (int i = 0; i < w->n; i++) {
        join_one(w, &w->pairs[i], w->pairs[i].agent_ws, "agent");
        join_one(w, &w->pairs[i], w->pairs[i].user_ws, "observer");
    }
}

/* ---- the messages ------------------------------------------------------------ */

static int make_token(char token[2 * TOKEN_BYTES + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[TOKEN_BYTES];
    if (RAND_bytes(b, sizeof b) != 1)
        return 0;
    for (int i = 0; i < TOKEN_BYTES; i++) {
        token[2 * i] = hex[b[i] >> 4];
        token[2 * i + 1] = hex[b[i] & 0xf];
    }
    token[2 * TOKEN_BYTES] = '\0';
    return 1;
}

/* As the probe does: "@<agent name> marker:<token>", mentioning {id, name}. */
static void send_marker(worker *w, pair *p)
{
    char content[BAND_NAME_SZ + 64], err[ERR_BUFSZ];
    if (!p->user_ws || !phx_is_joined(p->user_ws, p->topic))
        return;
    if (!make_token(p->token)) {
        fail(w, "pair %d: no random bytes for a token", p->index);
        return;
    }
    snprintf(content, sizeof content, "@%s marker:%s", p->agent.name, p->token);
    band_mention to_agent = {p->agent.id, p->agent.name, NULL};
    p->sent_ms = clock_mono_ms();
    if (band_send_message(w->user, p->room, content, &to_agent, 1, p->marker_id, err) == ERR_OK)
        w->rep.markers_sent++;
    else
        fail(w, "pair %d sending its marker: %s", p->index, err);
}

/* The SDK agent's answer, as fake-agent gives it. */
static void answer(worker *w, pair *p)
{
    char err[ERR_BUFSZ], ack[sizeof ACK_PREFIX + 2 * TOKEN_BYTES], id[BAND_ID_SZ];
    band_mention to_user = {w->me.id, NULL, w->me.handle};
    snprintf(ack, sizeof ack, "%s%s", ACK_PREFIX, p->inbox_token);
    err_code rc = band_agent_mark_processing(p->rest, p->room, p->inbox_id, err);
    if (rc == ERR_OK)
        rc = band_agent_send_message(p->rest, p->room, ack, &to_user, 1, id, err);
    if (rc == ERR_OK)
        rc = band_agent_mark_processed(p->rest, p->room, p->inbox_id, err);
    if (rc == ERR_OK)
        w->rep.answered++;
    else
        fail(w, "agent %d answering: %s", p->index, err);
    p->inbox_id[0] = '\0';
}

static int all_answered(const worker *w)
{
    return w->rep.replies_seen >= w->rep.markers_sent &&
           w->rep.processed_seen >= w->rep.markers_sent;
}

static void exchange(worker *w, int stage_s)
{
    for (int i = 0; i < w->n; i++)
        send_marker(w, &w->pairs[i]);
    int64_t end = deadline_in(stage_s);
    while (!all_answered(w) && clock_mono_ms() < end) {
        sweep(w);
        int busy = 0;
        for (int i = 0; i < w->n; i++)
            if (w->pairs[i].inbox_id[0]) {
                answer(w, &w->pairs[i]);
                busy = 1;
            }
        if (!busy)
            nap_ms(1);
    }
    if (!all_answered(w))
        fail(w, "after %d s: %d of %d replies, %d processed", stage_s, w->rep.replies_seen,
             w->rep.markers_sent, w->rep.processed_seen);
    for (int i = 0; i < w->n; i++)
        if (w->pairs[i].replied)
            w->rep.lat_ms[w->rep.nlat++] = (int32_t)(w->pairs[i].replied_ms - w->pairs[i].sent_ms);
}

/* ---- teardown -------------------------------------------------------------- */

static void close_socket(phx_client **c)
{
    char err[ERR_BUFSZ];
    if (!*c)
        return;
    phx_close(*c, err);
    phx_client_free(*c);
    *c = NULL;
}

static void delete_pair(worker *w, pair *p)
{
    char err[ERR_BUFSZ];
    close_socket(&p->agent_ws);
    close_socket(&p->user_ws);
    band_client_free(p->rest);
    p->rest = NULL;
    if (p->room[0]) {
        if (band_delete_chat(w->user, p->room, err) == ERR_OK)
            w->rep.rooms_deleted++;
        else
            fail(w, "deleting room %d: %s", p->index, err);
    }
    if (p->agent.id[0]) {
        if (band_delete_agent(w->user, p->agent.id, 1, err) == ERR_OK)
            w->rep.agents_deleted++;
        else
            fail(w, "deleting agent %d: %s", p->index, err);
    }
}

/* ---- the worker's life --------------------------------------------------- */

static void send_report(worker *w, int fd, int stage)
{
    w->rep.stage = stage;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        w->rep.peak_rss_kb = ru.ru_maxrss;
    ssize_t n;
    do
        n = write(fd, &w->rep, sizeof w->rep);
    while (n < 0 && errno == EINTR);
}

/* Keeps every socket serviced (heartbeats, pongs) until the parent says go. */
static int await_go(worker *w, int go_fd, int stage_s)
{
    int64_t end = deadline_in(stage_s);
    while (clock_mono_ms() < end) {
        sweep(w);
        struct pollfd pfd = {.fd = go_fd, .events = POLLIN};
        if (poll(&pfd, 1, 1) > 0) {
            char go;
            return read(go_fd, &go, 1) == 1;
        }
    }
    fail(w, "no go from the parent within %d s", stage_s);
    return 0;
}

static void setup(worker *w, int id, int stage_s)
{
    char err[ERR_BUFSZ];
    err_code rc = band_client_new(w->band->rest_url, w->band->user_key, NULL, &w->user, err);
    if (rc == ERR_OK)
        rc = band_get_profile(w->user, &w->me, err);
    if (rc != ERR_OK) {
        fail(w, "the user's client: %s", err);
        return;
    }
    for (int i = 0; i < w->n; i++)
        provision_pair(w, &w->pairs[i], id);
    connect_all(w, stage_s);
    join_all(w);
}

static int worker_main(const tk_band *band, int id, int n, int first, int report_fd, int go_fd,
                       int stage_s)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the bench */
    worker w = {.band = band, .n = n};
    w.rep.worker = id;
    w.pairs = calloc((size_t)n, sizeof *w.pairs);
    if (!w.pairs)
        return 2;
    for (int i = 0; i < n; i++)
        w.pairs[i] = (pair){.w = &w, .index = first + i};
    if (w.n)
        setup(&w, id, stage_s);
    send_report(&w, report_fd, STAGE_JOINED);
    if (await_go(&w, go_fd, stage_s) && w.user)
        exchange(&w, stage_s);
    for (int i = 0; w.user && i < n; i++)
        delete_pair(&w, &w.pairs[i]);
    band_client_free(w.user);
    send_report(&w, report_fd, STAGE_DONE);
    free(w.pairs);
    return 0;
}

/* ---- the parent ---------------------------------------------------------- */

typedef struct child {
    pid_t pid;
    int report_fd, go_fd;
    load_report rep[3]; /* by stage */
    int stage;          /* last stage reported; -1 once its pipe ended */
} child;

typedef struct bench {
    int agents, workers, stage_s;
    tk_band band;
    child kids[MAX_WORKERS];
    int nkids;
    long barrier_ws, barrier_agent_ws;
    int64_t t_start, t_joined, t_go, t_done;
} bench;

/* Descriptors: each worker's clients need about 3 each (socket, lws's
 * cancel pipe) plus curl's; raise the soft limit when it is low. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= WANT_NOFILE)
        return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > WANT_NOFILE ? WANT_NOFILE
                                                                              : rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
}

static int spawn_worker(bench *b, int id, int n, int first)
{
    int rep[2], go[2];
    if (pipe(rep) != 0 || pipe(go) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(rep[0]);
        close(go[1]);
        for (int k = 0; k < b->nkids; k++) { /* the other workers' pipes are not ours */
            close(b->kids[k].report_fd);
            close(b->kids[k].go_fd);
        }
        _exit(worker_main(&b->band, id, n, first, rep[1], go[0], b->stage_s));
    }
    close(rep[1]);
    close(go[0]);
    b->kids[b->nkids++] = (child){.pid = pid, .report_fd = rep[0], .go_fd = go[1]};
    return 0;
}

static int stage_reached(const bench *b, int stage)
{
    for (int k = 0; k < b->nkids; k++)
        if (b->kids[k].stage >= 0 && b->kids[k].stage < stage)
            return 0;
    return 1;
}

/* Reads reports until every live worker reached `stage` or the time is up. */
static int collect(bench *b, int stage, int64_t end)
{
    while (!stage_reached(b, stage) && clock_mono_ms() < end) {
        struct pollfd pfd[MAX_WORKERS];
        for (int k = 0; k < b->nkids; k++) { /* only those still owing this stage */
            int owes = b->kids[k].stage >= 0 && b->kids[k].stage < stage;
            pfd[k] = (struct pollfd){.fd = owes ? b->kids[k].report_fd : -1, .events = POLLIN};
        }
        if (poll(pfd, (nfds_t)b->nkids, 100) <= 0)
            continue;
        for (int k = 0; k < b->nkids; k++) {
            if (!(pfd[k].revents & (POLLIN | POLLHUP)))
                continue;
            load_report r;
            if (read(b->kids[k].report_fd, &r, sizeof r) == (ssize_t)sizeof r &&
                r.stage >= STAGE_JOINED && r.stage <= STAGE_DONE) {
                b->kids[k].rep[r.stage] = r;
                b->kids[k].stage = r.stage;
            } else {
                b->kids[k].stage = -1; /* ended without a report: counted as an error */
            }
        }
    }
    return stage_reached(b, stage);
}

static void release_workers(bench *b)
{
    for (int k = 0; k < b->nkids; k++) {
        ssize_t n = write(b->kids[k].go_fd, "g", 1);
        (void)n; /* a worker that is gone is counted by collect() */
    }
}

static void reap_workers(bench *b)
{
    int64_t end = clock_mono_ms() + 5000;
    for (int k = 0; k < b->nkids; k++) {
        child *c = &b->kids[k];
        while (waitpid(c->pid, NULL, WNOHANG) == 0) {
            if (clock_mono_ms() >= end) {
                kill(c->pid, SIGKILL);
                waitpid(c->pid, NULL, 0);
                break;
            }
            nap_ms(20);
        }
        close(c->report_fd);
        close(c->go_fd);
    }
}

/* ---- the report ------------------------------------------------------------ */

static load_report total_of(const bench *b, int *lost_workers)
{
    load_report t = {0};
    *lost_workers = 0;
    for (int k = 0; k < b->nkids; k++) {
        const load_report *j = &b->kids[k].rep[STAGE_JOINED], *d = &b->kids[k].rep[STAGE_DONE];
        if (b->kids[k].stage != STAGE_DONE)
            (*lost_workers)++;
        t.agents += d->agents;
        t.rooms += d->rooms;
        t.clients_open += j->clients_open;
        t.joins_ok += j->joins_ok;
        t.markers_sent += d->markers_sent;
        t.delivered += d->delivered;
        t.answered += d->answered;
        t.replies_seen += d->replies_seen;
        t.processed_seen += d->processed_seen;
        t.rooms_deleted += d->rooms_deleted;
        t.agents_deleted += d->agents_deleted;
        t.errors += d->stage ? d->errors : j->errors;
        if (d->peak_rss_kb > t.peak_rss_kb)
            t.peak_rss_kb = d->peak_rss_kb;
        if (!t.first_error[0] && (d->first_error[0] || j->first_error[0]))
            snprintf(t.first_error, sizeof t.first_error, "%s",
                     d->first_error[0] ? d->first_error : j->first_error);
    }
    return t;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Marker sent -> reply seen, across every worker; nearest-rank p95. */
static void print_latency(const bench *b)
{
    int32_t all[MAX_WORKERS * AGENTS_PER_WORKER_MAX];
    int n = 0;
    for (int k = 0; k < b->nkids; k++)
        for (int i = 0; i < b->kids[k].rep[STAGE_DONE].nlat; i++)
            all[n++] = b->kids[k].rep[STAGE_DONE].lat_ms[i];
    if (n == 0) {
        printf("reply_median_ms=NA\nreply_p95_ms=NA\nreply_max_ms=NA\n");
        return;
    }
    qsort(all, (size_t)n, sizeof *all, cmp_i32);
    int rank = (95 * n + 99) / 100;
    printf("reply_median_ms=%.1f\n",
           n % 2 ? (double)all[n / 2] : (all[n / 2 - 1] + all[n / 2]) / 2.0);
    printf("reply_p95_ms=%d\nreply_max_ms=%d\n", (int)all[rank - 1], (int)all[n - 1]);
}

/* The fake's own peak RSS (Linux: VmHWM). */
static long fake_peak_rss_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *fp = fopen(path, "r");
    while (fp && fgets(line, sizeof line, fp))
        if (sscanf(line, "VmHWM: %ld", &kb) == 1)
            break;
    if (fp)
        fclose(fp);
    return kb;
}

/* The fake takes a moment to notice closed sockets. */
static long settled_ws(bench *b)
{
    long ws = -1;
    int64_t end = clock_mono_ms() + SETTLE_MS;
    while ((ws = tk_band_stat(&b->band, "ws_connections")) > 0 && clock_mono_ms() < end)
        nap_ms(50);
    return ws;
}

/* Prints everything; returns 1 when the run was clean and complete. */
static int report(bench *b)
{
    int lost = 0;
    load_report t = total_of(b, &lost);
    int want = b->agents, errors = t.errors + lost;
    long ws_after = settled_ws(b);
    int live_agents = -1, live_rooms = -1;
    tk_band_stats(&b->band, &live_agents, &live_rooms);

    printf("# bench-fake-load: %d agents + %d observers over %d worker processes\n", b->agents,
           b->agents, b->nkids);
    printf("clients_wanted=%d\nclients_connected=%d\njoins_ok=%d\n", 2 * want, t.clients_open,
           t.joins_ok);
    printf("fake_ws_at_barrier=%ld\nfake_agent_ws_at_barrier=%ld\n", b->barrier_ws,
           b->barrier_agent_ws);
    printf("agents_registered=%d\nrooms_ready=%d\n", t.agents, t.rooms);
    printf("markers_sent=%d\nmessages_delivered=%d\nagent_replies_sent=%d\n", t.markers_sent,
           t.delivered, t.answered);
    printf("replies_seen=%d\nprocessed_seen=%d\n", t.replies_seen, t.processed_seen);
    printf("errors=%d\nworkers_lost=%d\n", errors, lost);
    if (t.first_error[0])
        redact_fprintf(stdout, "first_error=%s\n", t.first_error);
    print_latency(b);
    printf("setup_ms=%lld\nmessages_ms=%lld\nwall_ms=%lld\n",
           (long long)(b->t_joined - b->t_start), (long long)(b->t_done - b->t_go),
           (long long)(clock_mono_ms() - b->t_start));
    printf("rooms_deleted=%d\nagents_deleted=%d\n", t.rooms_deleted, t.agents_deleted);
    printf("fake_live_agents=%d\nfake_live_rooms=%d\nfake_ws_connections=%ld\n", live_agents,
           live_rooms, ws_after);
    static const char *const more[] = {"agent_connections", "rest_calls", "upgrade_attempts"};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
        printf("fake_%s=%ld\n", more[i], tk_band_stat(&b->band, more[i]));
    printf("fake_peak_rss_kb=%ld\nworker_peak_rss_kb=%ld\n", fake_peak_rss_kb(b->band.pid),
           t.peak_rss_kb);

    int complete = t.clients_open == 2 * want && t.joins_ok == 2 * want &&
                   b->barrier_ws == 2 * want && t.markers_sent == want && t.delivered == want &&
                   t.answered == want && t.replies_seen == want && t.processed_seen == want &&
                   t.rooms_deleted == want && t.agents_deleted == want;
    return errors == 0 && complete && live_agents == 0 && live_rooms == 0;
}

/* ---- main ----------------------------------------------------------------- */

static int run(bench *b)
{
    if (tk_band_start(&b->band, NULL) != 0)
        return 1;
    b->t_start = clock_mono_ms();
    int per = (b->agents + b->workers - 1) / b->workers, first = 0, ok = 1;
    for (int k = 0; k < b->workers && ok; k++) {
        int n = b->agents - first < per ? b->agents - first : per;
        ok = spawn_worker(b, k, n, first) == 0;
        first += n;
    }
    if (!ok)
        fprintf(stderr, "bench-fake-load: cannot start a worker: %s\n", strerror(errno));
    /* the barrier: every socket of every worker is open and joined now */
    collect(b, STAGE_JOINED, deadline_in(2 * b->stage_s + 5));
    b->t_joined = clock_mono_ms();
    b->barrier_ws = tk_band_stat(&b->band, "ws_connections");
    b->barrier_agent_ws = tk_band_stat(&b->band, "agent_connections");
    b->t_go = clock_mono_ms();
    release_workers(b);
    collect(b, STAGE_DONE, b->t_go + b->stage_s * 1000LL + CLEANUP_GRACE_MS);
    b->t_done = clock_mono_ms();
    reap_workers(b);
    int clean = ok && report(b);
    tk_band_stop(&b->band);
    return clean ? 0 : 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench-fake-load [-a AGENTS] [-w WORKERS 1..%d] [-t STAGE_SECONDS]\n"
                    "  at most %d agents per worker (redact's registry holds %d keys)\n",
            MAX_WORKERS, AGENTS_PER_WORKER_MAX, REDACT_MAX_SECRETS);
    return 2;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN); /* a worker gone mid-write is counted, not fatal */
    static bench b;
    b.agents = DEFAULT_AGENTS;
    b.workers = DEFAULT_WORKERS;
    b.stage_s = DEFAULT_STAGE_S;
    for (int i = 1; i < argc; i++) {
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = (strcmp(argv[i], "-a") == 0 && tk_parse_int(next, 1, 1000, &b.agents)) ||
                 (strcmp(argv[i], "-w") == 0 && tk_parse_int(next, 1, MAX_WORKERS, &b.workers)) ||
                 (strcmp(argv[i], "-t") == 0 && tk_parse_int(next, 1, 600, &b.stage_s));
        if (!ok)
            return usage();
        i++;
    }
    if (b.workers > b.agents)
        b.workers = b.agents;
    if ((b.agents + b.workers - 1) / b.workers > AGENTS_PER_WORKER_MAX)
        return usage();
    raise_nofile();
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return 2;
    int rc = run(&b);
    curl_global_cleanup();
    return rc;
}
