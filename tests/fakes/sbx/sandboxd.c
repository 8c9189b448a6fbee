/* sandboxd: see sandboxd.h. */
#include "sandboxd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "ctl.h"
#include "proxy.h"
#include "store.h"

#define MAX_LISTENERS 64
#define MAX_FROZEN 128
#define TICK_MS 100          /* timers and the state-folder check run this often */
#define MAX_FAULT_S 3600.0   /* a fault longer than an hour is a test bug */

typedef struct listener {
    char name[FSBX_NAME_MAX];
    int fd;
    int port;
} listener;

typedef struct sandboxd {
    const fsbx *f;
    FILE *log;
    int ctl_fd;
    listener ls[MAX_LISTENERS];
    size_t nls;
    proxy *px;
    int64_t cut_until;    /* net-cut: clients refused until then; 0 = none */
    int64_t frozen_until; /* freeze: nothing served until then; 0 = none */
    pid_t frozen[MAX_FROZEN];
    size_t nfrozen;
    int stop;
} sandboxd;

/* One JSON log line, as the real sandboxd logs. */
static void log_line(sandboxd *d, const char *level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void log_line(sandboxd *d, const char *level, const char *fmt, ...)
{
    char msg[1024], now[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fsbx_now_rfc3339(now, sizeof now);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "time", now);
    cJSON_AddStringToObject(o, "level", level);
    cJSON_AddStringToObject(o, "msg", msg);
    char *text = cJSON_PrintUnformatted(o);
    if (text) {
        fprintf(d->log, "%s\n", text);
        fflush(d->log);
    }
    free(text);
    cJSON_Delete(o);
}

/* ---- proxy hooks: decisions come from, and go to, the store ---- */

static void hook_decide(void *ud, const char *sandbox, const char *host, int port, pol_verdict *v)
{
    sandboxd *d = ud;
    store s;
    char err[ERR_BUFSZ];
    if (store_open(&s, d->f->state, err) != ERR_OK) {
        memset(v, 0, sizeof *v);
        snprintf(v->detail, sizeof v->detail, "policy store unavailable");
        log_line(d, "error", "policy lookup: %s", err);
        return;
    }
    pol_decide(store_get(&s, "policy"), sandbox, host, port, v);
    store_close(&s);
}

/* The log row a decision adds to, aggregated per sandbox, host and outcome
 * as `sbx policy log` shows it. */
static cJSON *log_row(cJSON *log, const char *sandbox, const char *host, const char *kind,
                      const char *rule)
{
    cJSON *row;
    cJSON_ArrayForEach(row, log) {
        if (!strcmp(store_str(row, "sandbox"), sandbox) && !strcmp(store_str(row, "host"), host) &&
            !strcmp(store_str(row, "proxy"), kind) && !strcmp(store_str(row, "rule"), rule))
            return row;
    }
    row = cJSON_CreateObject();
    if (row && !cJSON_AddItemToArray(log, row)) {
        cJSON_Delete(row);
        row = NULL;
    }
    if (row && (store_set_str(row, "sandbox", sandbox) || store_set_str(row, "host", host) ||
                store_set_str(row, "proxy", kind) || store_set_str(row, "rule", rule)))
        return NULL;
    return row;
}

static void hook_record(void *ud, const char *sandbox, const char *host, int port,
                        const char *kind, const pol_verdict *v)
{
    sandboxd *d = ud;
    const char *rule = !strcmp(v->rule, "<dial failed>") ? v->rule
                       : v->allowed                      ? "domain-allowed"
                                                         : "domain-blocked";
    const char *reason = v->allowed ? "" : v->rule[0] ? "deny-rule" : "default-deny";
    log_line(d, "info", "%s %s %s:%d for %s (%s)", kind, v->allowed ? "allowed" : "blocked", host,
             port, sandbox, v->detail);
    store s;
    char err[ERR_BUFSZ];
    if (store_open(&s, d->f->state, err) != ERR_OK) {
        log_line(d, "error", "policy log: %s", err);
        return;
    }
    cJSON *row = log_row(store_get(&s, "log"), sandbox, host, kind, rule);
    if (row) {
        store_set_str(row, "reason", reason);
        store_set_bool(row, "blocked", !v->allowed);
        store_set_num(row, "port", port);
        store_set_num(row, "last_seen", (double)time(NULL));
        store_set_num(row, "count", store_num(row, "count") + 1);
        if (store_save(&s, err) != ERR_OK)
            log_line(d, "error", "policy log: %s", err);
    }
    store_close(&s);
}

/* ---- listeners, one per sandbox ---- */

static listener *find_listener(sandboxd *d, const char *name)
{
    for (size_t i = 0; i < d->nls; i++)
        if (!strcmp(d->ls[i].name, name))
            return &d->ls[i];
    return NULL;
}

static int open_listener(sandboxd *d, const char *name, char *err)
{
    listener *l = find_listener(d, name);
    if (l)
        return l->port;
    if (d->nls == MAX_LISTENERS || strlen(name) >= sizeof l->name) {
        err_set(err, ERR_FULL, "too many sandboxes");
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
        err_set(err, ERR_NETWORK, "proxy listener: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    l = &d->ls[d->nls++];
    snprintf(l->name, sizeof l->name, "%s", name);
    l->fd = fd;
    l->port = ntohs(a.sin_port);
    log_line(d, "info", "proxy for sandbox %s listening on 127.0.0.1:%d", name, l->port);
    return l->port;
}

static void close_listener(sandboxd *d, const char *name)
{
    listener *l = find_listener(d, name);
    if (!l)
        return;
    close(l->fd);
    *l = d->ls[--d->nls];
    proxy_drop_sandbox(d->px, name);
    log_line(d, "info", "proxy for sandbox %s closed", name);
}

static void accept_clients(sandboxd *d, listener *l, int64_t now)
{
    for (int i = 0; i < 64; i++) {
        int fd = accept(l->fd, NULL, NULL);
        if (fd < 0)
            return;
        if (d->cut_until) /* the network is cut: the client sees its connection close */
            close(fd);
        else
            proxy_accept(d->px, fd, l->name, now);
    }
}

/* ---- faults ---- */

static void thaw(sandboxd *d)
{
    for (size_t i = 0; i < d->nfrozen; i++)
        kill(-d->frozen[i], SIGCONT);
    if (d->frozen_until)
        log_line(d, "info", "freeze over: %zu session group(s) resumed", d->nfrozen);
    d->nfrozen = 0;
    d->frozen_until = 0;
}

static void freeze(sandboxd *d, int64_t ms, int64_t now)
{
    thaw(d);
    store s;
    char err[ERR_BUFSZ];
    if (store_open(&s, d->f->state, err) == ERR_OK) {
        store_prune_sessions(&s);
        cJSON *it;
        cJSON_ArrayForEach(it, store_get(&s, "sessions")) {
            pid_t pgid = (pid_t)store_num(it, "pgid");
            if (d->nfrozen < MAX_FROZEN && pgid > 1 && kill(-pgid, SIGSTOP) == 0)
                d->frozen[d->nfrozen++] = pgid;
        }
        store_close(&s);
    }
    d->frozen_until = now + ms;
    log_line(d, "info", "freeze: %zu session group(s) stopped for %lld ms", d->nfrozen,
             (long long)ms);
}

static int64_t parse_seconds(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v > 0) || v > MAX_FAULT_S)
        return -1;
    return (int64_t)(v * 1000);
}

/* ---- control requests ---- */

static void dispatch(sandboxd *d, const char *line, char *reply, size_t cap, int64_t now)
{
    char err[ERR_BUFSZ];
    const char *arg = strchr(line, ' ');
    arg = arg ? arg + 1 : "";
    int64_t ms;
    if (!strcmp(line, "ping")) {
        snprintf(reply, cap, "pong %ld", (long)getpid());
    } else if (!strncmp(line, "open ", 5)) {
        int port = open_listener(d, arg, err);
        if (port < 0)
            snprintf(reply, cap, "error %.400s", err);
        else
            snprintf(reply, cap, "port %d", port);
    } else if (!strncmp(line, "close ", 6)) {
        close_listener(d, arg);
        snprintf(reply, cap, "ok");
    } else if (!strncmp(line, "net-cut ", 8) && (ms = parse_seconds(arg)) > 0) {
        log_line(d, "info", "net-cut: dropping %zu connection(s), refusing for %lld ms",
                 proxy_count(d->px), (long long)ms);
        proxy_drop_all(d->px);
        d->cut_until = now + ms;
        snprintf(reply, cap, "ok");
    } else if (!strncmp(line, "freeze ", 7) && (ms = parse_seconds(arg)) > 0) {
        freeze(d, ms, now);
        snprintf(reply, cap, "ok");
    } else if (!strncmp(line, "stall ", 6) && (ms = parse_seconds(arg)) > 0) {
        /* A network blip: tunnels stop moving bytes but stay open, and the
         * processes keep running. Too short for any keepalive to notice. */
        thaw(d);
        d->frozen_until = now + ms;
        log_line(d, "info", "stall: tunnels stalled for %lld ms", (long long)ms);
        snprintf(reply, cap, "ok");
    } else if (!strcmp(line, "stop")) {
        d->stop = 1;
        snprintf(reply, cap, "ok");
    } else {
        snprintf(reply, cap, "error unknown request: %.200s", line);
    }
}

static void serve_ctl(sandboxd *d, int64_t now)
{
    char line[CTL_LINE_MAX], reply[CTL_LINE_MAX];
    int fd = ctl_accept(d->ctl_fd, line, sizeof line);
    if (fd < 0)
        return;
    dispatch(d, line, reply, sizeof reply, now);
    ctl_reply(fd, reply);
}

/* ---- the loop ---- */

static void run_timers(sandboxd *d, int64_t now)
{
    if (d->frozen_until && now >= d->frozen_until)
        thaw(d);
    if (d->cut_until && now >= d->cut_until) {
        d->cut_until = 0;
        log_line(d, "info", "net-cut over: accepting connections again");
    }
    struct stat st;
    if (stat(d->f->state, &st) != 0) {
        log_line(d, "info", "state folder is gone; exiting");
        d->stop = 1;
    }
}

/* One poll round. Listeners and connections are served before control
 * requests, because a request may close a listener and shift the array
 * poll answered about. */
static void serve_once(sandboxd *d)
{
    struct pollfd fds[1 + MAX_LISTENERS + PROXY_POLLFDS];
    size_t n = 0;
    fds[n++] = (struct pollfd){d->ctl_fd, POLLIN, 0};
    int serving = d->frozen_until == 0;
    size_t first_listener = n, nls = serving ? d->nls : 0;
    for (size_t i = 0; i < nls; i++)
        fds[n++] = (struct pollfd){d->ls[i].fd, POLLIN, 0};
    size_t first_conn = n;
    size_t nconn = serving ? proxy_pollfds(d->px, fds + n) : 0;
    n += nconn;
    if (poll(fds, (nfds_t)n, TICK_MS) < 0 && errno != EINTR)
        d->stop = 1;
    int64_t now = clock_mono_ms();
    for (size_t i = 0; i < nls; i++)
        if (fds[first_listener + i].revents)
            accept_clients(d, &d->ls[i], now);
    if (serving)
        proxy_step(d->px, fds + first_conn, nconn, now);
    if (fds[0].revents)
        serve_ctl(d, now);
}

static void shut_down(sandboxd *d)
{
    thaw(d);
    proxy_free(d->px);
    for (size_t i = 0; i < d->nls; i++)
        close(d->ls[i].fd);
    d->nls = 0;
    close(d->ctl_fd);
    unlink(d->f->sock);
    log_line(d, "info", "daemon stopped");
}

int sandboxd_run(const fsbx *f, FILE *log)
{
    /* A client that vanishes mid-write must cost one connection, not the daemon. */
    signal(SIGPIPE, SIG_IGN);
    sandboxd d;
    memset(&d, 0, sizeof d);
    d.f = f;
    d.log = log;
    char err[ERR_BUFSZ];
    proxy_hooks hooks = {hook_decide, hook_record, &d};
    d.px = proxy_new(&hooks);
    d.ctl_fd = d.px ? ctl_listen(f->sock, err) : -1;
    if (d.ctl_fd < 0) {
        log_line(&d, "error", "cannot start: %s", d.px ? err : "out of memory");
        proxy_free(d.px);
        return 1;
    }
    log_line(&d, "info", "api server started successfully");
    while (!d.stop) {
        run_timers(&d, clock_mono_ms());
        if (!d.stop)
            serve_once(&d);
    }
    shut_down(&d);
    return 0;
}
