/* bench-probe: how long one marker round trip takes, and what it costs.
 *
 *   bench-probe [-n N]                 N probes (default 50), then a summary
 *   bench-probe --prepare-state DIR [--hold-s S]
 *                                      a live run for band-smoke to probe
 *   bench-probe --rusage CMD [ARG...]  run CMD, print its peak RSS
 *
 * The first two start the fake Band (tk_band.h), provision an agent and a
 * room as the user with fixtures/provision.h (the same code phase.04 runs,
 * its state in a folder of its own), and start the stand-in agent
 * tests/bin/fake-agent as a child, its four BAND_* variables in its own
 * environment only and its log in that folder, then wait for its readiness
 * line.
 *
 * Default mode: probe_run (fixtures/probe.h) N times in this process and
 * print key=value lines: probes run and passed, round-trip latency
 * (probe_outcome.latency_ms, send to verdict) median/p95/p99/max, the whole
 * probe_run call (connect, join, send, verdict, leave, close) median/max,
 * and this process's peak RSS. Exit 0 when every probe passed.
 *
 * --prepare-state: DIR becomes a band-smoke run state whose phases start
 * to launch passed and whose agent is the live fake-agent, plus DIR/bench.env
 * (0600; the URLs and the user key, for SMOKE_ENV_FILE, so the key stays out
 * of every environment). Prints "bench-probe: ready ..." once that is so,
 * then holds everything up until SIGTERM/SIGINT, S seconds (default 600),
 * its parent's death, or the agent's; then reaps and stops all.
 *
 * --rusage: the one child is CMD, so RUSAGE_CHILDREN's ru_maxrss is CMD's
 * own peak RSS. Prints "bench-probe: maxrss_kb=N exit=S sampled_anon_kb=A
 * sampled_file_kb=F" on stderr after CMD's output (A and F: sampled peaks of
 * its anonymous and file-backed RSS, from /proc) and exits with CMD's
 * status. CMD is stopped after 300 s.
 *
 * Speed targets are reported, never asserted: scripts/bench-band.sh compares.
 * Loopback only; every child is stopped before exit, even on failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <signal.h>
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
#include "config.h"
#include "err.h"
#include "platform.h"
#include "probe.h"
#include "proc.h"
#include "provision.h"
#include "redact.h"
#include "state.h"
#include "tk.h"
#include "tk_band.h"

#define DEFAULT_PROBES 50
#define MAX_PROBES 10000
#define PROBE_TIMEOUT_S 10       /* E2E_TIMEOUT of each probe: loopback answers in ms */
#define CLI_TIMEOUT_S 30         /* E2E_TIMEOUT written for band-smoke */
#define AGENT_READY_MS 15000     /* fake-agent's readiness line */
#define AGENT_STOP_MS 5000       /* SIGTERM -> SIGKILL */
#define DEFAULT_HOLD_S 600
#define MAX_HOLD_S 3600
#define NAP_MS 50
#define RUSAGE_TIMEOUT_S 300    /* --rusage: no command runs longer */
#define READY_LINE "Agent started:"
#define ENV_FILE "bench.env"

/* The one global: how a signal asks the loops to stop early. */
static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* No SA_RESTART: a signal cuts a nap short so the loop sees the flag. */
static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = SIG_IGN; /* a peer closing mid-write must be an error, not a death */
    sigaction(SIGPIPE, &sa, NULL);
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the world: fake Band, a provisioned run, the stand-in agent ---------- */

typedef struct world {
    tk_band band;
    int band_up;
    config cfg;
    state_store store;
    state_t *st;
    char *tmp;          /* our own folder in default mode; NULL with --prepare-state */
    char dir[STATE_PATH_SZ];
    char agent_log[STATE_PATH_SZ + 16];
    pid_t agent;
    int64_t agent_started_ms;
    int64_t agent_ready_ms;
} world;

static err_code save_state(void *ud, char *err)
{
    world *w = ud;
    return state_save(&w->store, w->st, err);
}

static void fill_config(world *w)
{
    config *c = &w->cfg;
    memset(c, 0, sizeof *c);
    snprintf(c->rest_url, sizeof c->rest_url, "%s", w->band.rest_url);
    snprintf(c->rest_url_var, sizeof c->rest_url_var, "BAND_REST_URL");
    snprintf(c->ws_url, sizeof c->ws_url, "%s", w->band.ws_url);
    snprintf(c->api_key_user, sizeof c->api_key_user, "%s", w->band.user_key);
    c->e2e_timeout_s = PROBE_TIMEOUT_S;
    c->reconnect_window_s = 300;
}

/* The key file holds one line, BAND_API_KEY=<key>. It is removed at once:
 * from here on the key lives only in this process and the agent's env. */
static err_code take_agent_key(const char *path, char *key, size_t cap, char *err)
{
    char *text = tk_read(path, NULL);
    const char *value = text ? strchr(text, '=') : NULL;
    err_code rc = ERR_OK;
    if (!value || strncmp(text, "BAND_API_KEY=", (size_t)(value - text) + 1) != 0)
        rc = err_set(err, ERR_CORRUPT, "the agent key file %s is not BAND_API_KEY=<key>", path);
    size_t n = value ? strcspn(value + 1, "\r\n") : 0;
    if (rc == ERR_OK && (n == 0 || n >= cap))
        rc = err_set(err, ERR_CORRUPT, "the agent key in %s is empty or too long", path);
    if (rc == ERR_OK) {
        memcpy(key, value + 1, n);
        key[n] = '\0';
    }
    if (text) {
        OPENSSL_cleanse(text, strlen(text));
        free(text);
    }
    char why[ERR_BUFSZ];
    proc_envfile_remove(path, why);
    return rc;
}

/* The child: log to the world's folder, the key in its own environment only,
 * and it dies with us. Never returns. */
static void exec_agent(const world *w, const char *bin, const char *key)
{
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    int fd = open(w->agent_log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0 || dup2(fd, STDERR_FILENO) < 0 || dup2(fd, STDOUT_FILENO) < 0)
        _exit(126);
    setenv("BAND_AGENT_ID", w->st->agent_id, 1);
    setenv("BAND_API_KEY", key, 1);
    setenv("BAND_REST_URL", w->band.rest_url, 1);
    setenv("BAND_WS_URL", w->band.ws_url, 1);
    unsetenv("BAND_API_KEY_USER");
    execl(bin, bin, (char *)NULL);
    _exit(127);
}

static int log_has(const char *path, const char *needle)
{
    char *text = tk_read(path, NULL);
    int found = text && strstr(text, needle);
    free(text);
    return found;
}

/* Bounded by AGENT_READY_MS and by the agent's own death. */
static err_code await_ready(world *w, char *err)
{
    int64_t end = clock_mono_ms() + AGENT_READY_MS;
    while (!log_has(w->agent_log, READY_LINE)) {
        int status;
        if (waitpid(w->agent, &status, WNOHANG) == w->agent) {
            w->agent = 0;
            return err_set(err, ERR_PROCESS, "fake-agent exited before its readiness line "
                           "(see %s)", w->agent_log);
        }
        if (clock_mono_ms() >= end || stop_requested)
            return err_set(err, ERR_TIMEOUT, "fake-agent did not log '%s' within %d ms "
                           "(see %s)", READY_LINE, AGENT_READY_MS, w->agent_log);
        nap_ms(NAP_MS);
    }
    w->agent_ready_ms = clock_wall_ms(NULL);
    return ERR_OK;
}

static err_code start_agent(world *w, const char *key_file, char *err)
{
    char key[BAND_KEY_SZ];
    err_code rc = take_agent_key(key_file, key, sizeof key, err);
    if (rc != ERR_OK)
        return rc;
    char *bin = tk_bin("fake-agent");
    if (access(bin, X_OK) != 0) {
        rc = err_set(err, ERR_PROCESS, "%s is not built (cmake --build ... --target "
                     "fake-agent)", bin);
    } else {
        w->agent_started_ms = clock_wall_ms(NULL);
        fflush(NULL);
        w->agent = fork();
        if (w->agent == 0)
            exec_agent(w, bin, key);
        if (w->agent < 0) {
            w->agent = 0;
            rc = err_set(err, ERR_PROCESS, "fork: %s", strerror(errno));
        }
    }
    OPENSSL_cleanse(key, sizeof key);
    free(bin);
    return rc == ERR_OK ? await_ready(w, err) : rc;
}

static void stop_agent(world *w)
{
    if (w->agent <= 0)
        return;
    kill(w->agent, SIGTERM);
    int64_t end = clock_mono_ms() + AGENT_STOP_MS;
    pid_t got;
    while ((got = waitpid(w->agent, NULL, WNOHANG)) == 0 && clock_mono_ms() < end)
        nap_ms(NAP_MS);
    if (got == 0) {
        kill(w->agent, SIGKILL);
        waitpid(w->agent, NULL, 0);
    }
    w->agent = 0;
}

/* `dir` NULL: a temp folder of our own, removed at the end. */
static err_code world_up(world *w, const char *dir, char *err)
{
    memset(w, 0, sizeof *w);
    if (!dir)
        dir = w->tmp = tk_tmpdir("bench-probe");
    snprintf(w->dir, sizeof w->dir, "%s", dir);
    snprintf(w->agent_log, sizeof w->agent_log, "%s/agent.log", w->dir);
    if (tk_band_start(&w->band, NULL) != 0)
        return err_set(err, ERR_PROCESS, "the fake Band did not start");
    w->band_up = 1;
    fill_config(w);
    err_code rc = state_store_init(&w->store, w->dir, NULL, err);
    if (rc != ERR_OK)
        return rc;
    if (!(w->st = state_new(&w->store)))
        return err_set(err, ERR_NOMEM, "out of memory for a run state");
    provision_out prov;
    rc = provision_run(&w->cfg, w->st, save_state, w, w->dir, &prov, err);
    if (rc != ERR_OK)
        return err_wrap(err, rc, "provisioning");
    return start_agent(w, prov.key_file, err);
}

/* A band-smoke run may have saved the state since: reap what it holds now. */
static void reap(world *w)
{
    state_t *now = NULL;
    char err[ERR_BUFSZ];
    if (!w->st)
        return;
    if (state_load(&w->store, &now, err) == ERR_OK) {
        state_free(w->st);
        w->st = now;
    }
    if (provision_reap(&w->cfg, w->st, save_state, w, err) != ERR_OK)
        redact_fprintf(stderr, "bench-probe: reaping the agent and room: %s\n", err);
}

/* Reaps, stops the agent and the fake, removes our folder. Returns 0 when
 * Band is left with no live agent and no live room. */
static int world_down(world *w)
{
    int clean = 1;
    reap(w);
    stop_agent(w);
    if (w->band_up) {
        int agents = -1, rooms = -1;
        if (tk_band_stats(&w->band, &agents, &rooms) != 0 || agents != 0 || rooms != 0) {
            fprintf(stderr, "bench-probe: left behind: %d agents, %d rooms\n", agents, rooms);
            clean = 0;
        }
        tk_band_stop(&w->band);
    }
    state_free(w->st);
    w->st = NULL;
    if (w->tmp) {
        tk_rmtree(w->tmp);
        free(w->tmp);
    }
    return clean;
}

/* ---- statistics ---------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest rank on a sorted array: the smallest value with at least p% of
 * the samples at or below it. */
static int64_t percentile(const int64_t *sorted, int n, int p)
{
    int rank = (p * n + 99) / 100;
    return sorted[rank < 1 ? 0 : rank - 1];
}

static double median(const int64_t *sorted, int n)
{
    return n % 2 ? (double)sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
}

static long peak_rss_kb(int who)
{
    struct rusage ru;
    return getrusage(who, &ru) == 0 ? ru.ru_maxrss : -1; /* KiB on Linux */
}

static void print_series(const char *name, int64_t *v, int n)
{
    if (n == 0) {
        printf("%s_median_ms=NA\n%s_p95_ms=NA\n%s_p99_ms=NA\n%s_max_ms=NA\n", name, name, name,
               name);
        return;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    printf("%s_median_ms=%.1f\n", name, median(v, n));
    printf("%s_p95_ms=%lld\n", name, (long long)percentile(v, n, 95));
    printf("%s_p99_ms=%lld\n", name, (long long)percentile(v, n, 99));
    printf("%s_min_ms=%lld\n", name, (long long)v[0]);
    printf("%s_max_ms=%lld\n", name, (long long)v[n - 1]);
}

/* ---- default mode: N probes ------------------------------------------------ */

typedef struct samples {
    int64_t *rtt;   /* send to verdict, from probes that reached one */
    int64_t *call;  /* the whole probe_run */
    int n_rtt, n_call, run, passed;
} samples;

static void probe_once(world *w, FILE *quiet, samples *s)
{
    probe_target t = {w->st->room_id, w->st->agent_id, w->st->agent_name};
    probe_outcome out;
    char err[ERR_BUFSZ];
    int64_t t0 = clock_mono_ms();
    err_code rc = probe_run(&w->cfg, &t, quiet, &out, err);
    s->call[s->n_call++] = clock_mono_ms() - t0;
    s->run++;
    if (rc == ERR_OK && out.latency_ms >= 0)
        s->rtt[s->n_rtt++] = out.latency_ms;
    if (rc == ERR_OK && out.passed)
        s->passed++;
    else
        redact_fprintf(stderr, "bench-probe: probe %d failed (%s): %s\n", s->run, err_str(rc),
                       out.detail);
}

static int run_probes(int n)
{
    world w;
    char err[ERR_BUFSZ];
    samples s = {calloc((size_t)n, sizeof(int64_t)), calloc((size_t)n, sizeof(int64_t)), 0, 0, 0,
                 0};
    FILE *quiet = fopen("/dev/null", "w");
    if (!s.rtt || !s.call || !quiet) {
        fprintf(stderr, "bench-probe: out of memory or no /dev/null\n");
        return 2;
    }
    err_code rc = world_up(&w, NULL, err);
    if (rc == ERR_OK) {
        printf("# bench-probe: %d probes through fake-agent, fake Band on loopback\n", n);
        for (int i = 0; i < n && !stop_requested; i++)
            probe_once(&w, quiet, &s);
    } else {
        redact_fprintf(stderr, "bench-probe: setup failed (%s): %s\n", err_str(rc), err);
    }
    int clean = world_down(&w);
    if (rc == ERR_OK) {
        printf("probes_run=%d\nprobes_passed=%d\n", s.run, s.passed);
        print_series("rtt", s.rtt, s.n_rtt);
        print_series("call", s.call, s.n_call);
        printf("peak_rss_kb=%ld\n", peak_rss_kb(RUSAGE_SELF));
    }
    fclose(quiet);
    free(s.rtt);
    free(s.call);
    return rc == ERR_OK && clean && s.passed == n ? 0 : 1;
}

/* ---- --prepare-state: a live run for band-smoke ------------------------------ */

/* What phases 01-04 leave behind, with the live fake-agent as the launched agent. */
static err_code mark_launched(world *w, char *err)
{
    static const char *const done[] = {"start", "preflight", "sandbox", "launch"};
    int64_t now = clock_wall_ms(NULL);
    for (size_t i = 0; i < sizeof done / sizeof done[0]; i++)
        state_set_phase(w->st, done[i], RESULT_PASSED, now, 0, "prepared by bench-probe");
    w->st->agent_process = (state_agent_process){
        .generation = 1,
        .pid = (int)w->agent,
        .start_token = plat_proc_start_token(w->agent),
        .launched_at_ms = w->agent_started_ms,
        .ready_at_ms = w->agent_ready_ms,
    };
    return state_save(&w->store, w->st, err);
}

/* band-smoke reads the URLs and the user key from here (SMOKE_ENV_FILE). */
static err_code write_env_file(world *w, char *err)
{
    char rest[CONFIG_URL_SZ + 32], ws[CONFIG_URL_SZ + 32], key[TK_BAND_KEY_SZ + 32],
        timeout[32], path[STATE_PATH_SZ + 32];
    snprintf(rest, sizeof rest, "BAND_REST_URL=%s", w->band.rest_url);
    snprintf(ws, sizeof ws, "BAND_WS_URL=%s", w->band.ws_url);
    snprintf(key, sizeof key, "BAND_API_KEY_USER=%s", w->band.user_key);
    snprintf(timeout, sizeof timeout, "E2E_TIMEOUT=%d", CLI_TIMEOUT_S);
    const char *const entries[] = {rest, ws, key, timeout, NULL};
    snprintf(path, sizeof path, "%s/%s", w->dir, ENV_FILE);
    char why[ERR_BUFSZ];
    proc_envfile_remove(path, why); /* one left by an earlier preparation */
    err_code rc = proc_envfile_write(w->dir, ENV_FILE, entries, path, sizeof path, err);
    OPENSSL_cleanse(key, sizeof key);
    return rc;
}

/* Until a signal, the deadline, our parent's death (PDEATHSIG is a
 * signal too) or the agent's. */
static void hold(world *w, int hold_s)
{
    int64_t end = clock_mono_ms() + (int64_t)hold_s * 1000;
    while (!stop_requested && clock_mono_ms() < end) {
        if (waitpid(w->agent, NULL, WNOHANG) == w->agent) {
            w->agent = 0;
            fprintf(stderr, "bench-probe: fake-agent exited while holding (see %s)\n",
                    w->agent_log);
            return;
        }
        nap_ms(100);
    }
}

static int prepare_state(const char *dir, int hold_s)
{
    world w;
    char err[ERR_BUFSZ];
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* a script that dies takes us with it */
    err_code rc = world_up(&w, dir, err);
    if (rc == ERR_OK)
        rc = mark_launched(&w, err);
    if (rc == ERR_OK)
        rc = write_env_file(&w, err);
    if (rc == ERR_OK) {
        printf("bench-probe: ready state=%s/state.json env=%s/%s agent_pid=%d hold_s=%d\n",
               w.dir, w.dir, ENV_FILE, (int)w.agent, hold_s);
        fflush(stdout);
        hold(&w, hold_s);
    } else {
        redact_fprintf(stderr, "bench-probe: preparing %s failed (%s): %s\n", dir, err_str(rc),
                       err);
    }
    char path[STATE_PATH_SZ + 32];
    snprintf(path, sizeof path, "%s/%s", w.dir, ENV_FILE);
    proc_envfile_remove(path, err);
    int clean = world_down(&w);
    printf("bench-probe: stopped (%s)\n", clean ? "nothing left on the fake Band" : "LEAK");
    return rc == ERR_OK && clean ? 0 : 1;
}

/* ---- --rusage: one command's peak RSS ------------------------------------- */

/* Sampled peaks of /proc/PID/status: how much of the RSS is the process's
 * own memory (anonymous: heap, stacks) and how much is mapped files
 * (mostly shared libraries). Sampling can miss a short spike; the kernel's
 * ru_maxrss cannot, so that one is the figure, these the explanation. */
typedef struct mem_split {
    long anon_kb, file_kb;
} mem_split;

static void sample_status(pid_t pid, mem_split *peak)
{
    char path[64], line[256];
    long v;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return;
    while (fgets(line, sizeof line, fp)) {
        if (sscanf(line, "RssAnon: %ld", &v) == 1 && v > peak->anon_kb)
            peak->anon_kb = v;
        else if (sscanf(line, "RssFile: %ld", &v) == 1 && v > peak->file_kb)
            peak->file_kb = v;
    }
    fclose(fp);
}

/* Samples every millisecond until the child ends; past the deadline it is
 * stopped (SIGTERM, then SIGKILL) so a hung command cannot hang the bench. */
static int wait_sampling(pid_t pid, mem_split *peak)
{
    int status = 0;
    int64_t end = clock_mono_ms() + RUSAGE_TIMEOUT_S * 1000LL;
    int signalled = 0;
    pid_t got;
    while ((got = waitpid(pid, &status, WNOHANG)) == 0 || (got < 0 && errno == EINTR)) {
        sample_status(pid, peak);
        if (clock_mono_ms() >= end && signalled < 2) {
            kill(pid, signalled ? SIGKILL : SIGTERM);
            signalled++;
            end += AGENT_STOP_MS;
        }
        nap_ms(1);
    }
    if (signalled)
        fprintf(stderr, "bench-probe: the command ran past %d s and was stopped\n",
                RUSAGE_TIMEOUT_S);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int rusage_of(char **argv)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("bench-probe: fork");
        return 2;
    }
    if (pid == 0) {
        execv(argv[0], argv);
        fprintf(stderr, "bench-probe: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    mem_split peak = {0, 0};
    int code = wait_sampling(pid, &peak);
    fprintf(stderr, "bench-probe: maxrss_kb=%ld exit=%d sampled_anon_kb=%ld sampled_file_kb=%ld\n",
            peak_rss_kb(RUSAGE_CHILDREN), code, peak.anon_kb, peak.file_kb);
    return code;
}

/* ---- main ---------------------------------------------------------------- */

static int usage(void)
{
    fprintf(stderr, "usage: bench-probe [-n N]\n"
                    "       bench-probe --prepare-state DIR [--hold-s S]\n"
                    "       bench-probe --rusage CMD [ARG...]\n");
    return 2;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 3 && strcmp(argv[1], "--rusage") == 0)
        return rusage_of(argv + 2);
    install_signals();
    int n = DEFAULT_PROBES, hold_s = DEFAULT_HOLD_S;
    const char *prepare = NULL;
    for (int i = 1; i < argc; i++) {
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "-n") == 0 && tk_parse_int(next, 1, MAX_PROBES, &n))
            i++;
        else if (strcmp(argv[i], "--hold-s") == 0 && tk_parse_int(next, 1, MAX_HOLD_S, &hold_s))
            i++;
        else if (strcmp(argv[i], "--prepare-state") == 0 && next && next[0])
            prepare = argv[++i];
        else
            return usage();
    }
    return prepare ? prepare_state(prepare, hold_s) : run_probes(n);
}
