/* band-smoke-rehearsal: the whole smoke offline, with the interruptions
 * injected. `band-smoke rehearse` hands over to this program.
 *
 *   band-smoke-rehearsal [--scenario NAME[,NAME...]] [--agent COMMAND] [--clean] [--list]
 *
 * Several names run those scenarios at the same time (at most --jobs N at
 * once), each in its own driver process and world (group.h): how CI folds
 * its waiting scenarios.
 *
 * --agent COMMAND runs COMMAND (through /bin/sh -c, inside the fake
 * sandbox, from the folder holding the agent.py band-smoke copied there,
 * in the environment the stand-in gets) as the sandboxed agent instead of
 * the C stand-in: an SDK developer's own build, e.g.
 * `uv run --script agent.py`. The children then run at time scale 1 (the
 * real SDK knows no other), the stand-in at REHEARSAL_STANDIN_SCALE.
 *
 * The default scenario, `main`, runs phases 01 to 13 through the same
 * `band-smoke phase` code the operator uses, against the fake Band server
 * and the fake sbx, and ends with evidence.md PASS, no live fake agent or
 * room, and no secret anywhere. The other scenarios are the negative
 * rehearsals: each ends with the right verdict and a clear reason.
 */
#define _GNU_SOURCE /* realpath */
#include "rehearse.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agentlog.h"
#include "clock.h"
#include "group.h"
#include "redact.h"
#include "run.h"
#include "sig.h"
#include "tk.h"
#include "tk_run.h"
#include "via_ctest.h"
#include "tscale.h"

static volatile sig_atomic_t interrupted;

/* A signal that came before the sleep began must end it too: a Ctrl-C
 * during a step ends the step, and the wait after it then returns at once. */
void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (!interrupted && nanosleep(&ts, &ts) != 0)
        ;
}

/* Ctrl-C (or SIGTERM, SIGHUP): remember it, and pass it on to the step
 * running now, whose own process group a terminal does not reach; every
 * step and wait then returns at once, and main stops the world. */
static void on_interrupt(int sig)
{
    if (!interrupted)
        interrupted = sig;
    run_forward_signal(sig);
}

void say(rehearsal *r, const char *fmt, ...)
{
    if (interrupted) /* one line says so at the end; the rest would be noise */
        return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("[%6.1fs] %s\n", (clock_mono_ms() - r->started_ms) / 1000.0, msg);
    fflush(stdout);
}

int check(rehearsal *r, int ok, const char *fmt, ...)
{
    if (interrupted) /* what an interrupted step left proves nothing: no noise */
        return ok;
    r->checks++;
    if (ok)
        return 1;
    r->failures++;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    say(r, "CHECK FAILED: %s", msg);
    return 0;
}

static const char *verdict_of_exit(int status)
{
    return status == 0 ? "PASSED" : status == 77 ? "SKIPPED" : status == 1 ? "FAILED"
           : status == -1 ? "TIMED OUT" : "ERROR";
}

int step_smoke(rehearsal *r, int want_exit, const char *a, const char *b, const char *c)
{
    if (interrupted)
        return -2;
    char *argv[] = {r->w.band_smoke, (char *)a, (char *)b, (char *)c, NULL};
    run_out out;
    say(r, "$ band-smoke %s%s%s%s%s", a, b ? " " : "", b ? b : "", c ? " " : "", c ? c : "");
    int status = run_child(&r->w, argv, 300000, "          | ", &out);
    check(r, status == want_exit, "band-smoke %s %s: exit %d, expected %d", a, b ? b : "",
          status, want_exit);
    run_out_free(&out);
    return status;
}

int step_phase(rehearsal *r, const char *phase, int want_exit)
{
    if (interrupted)
        return -2;
    if (r->via_ctest)
        return step_ctest_phase(r, phase, want_exit);
    char *argv[] = {r->w.band_smoke, "phase", (char *)phase, NULL};
    run_out out;
    say(r, "phase %s", phase);
    int64_t t0 = clock_mono_ms();
    int status = run_child(&r->w, argv, 300000, "          | ", &out);
    say(r, "phase %s -> %s (exit %d, %.1f s)", phase, verdict_of_exit(status), status,
        (clock_mono_ms() - t0) / 1000.0);
    check(r, status == want_exit, "phase %s: exit %d (%s), expected %d", phase, status,
          verdict_of_exit(status), want_exit);
    if (status == 77)
        check(r, strncmp(out.text, "SKIPPED: ", 9) == 0, "phase %s: first line is not SKIPPED:",
              phase);
    run_out_free(&out);
    return status;
}

void inject_sbx(rehearsal *r, const char *why, const char *kind, const char *arg)
{
    say(r, "INJECT %s: sbx _fault %s %s", why, kind, arg);
    char *argv[] = {r->w.sbx_bin, "_fault", (char *)kind, (char *)arg, NULL};
    run_out out;
    int status = run_child(&r->w, argv, 20000, "          | ", &out);
    check(r, status == 0, "fault %s %s: exit %d", kind, arg, status);
    run_out_free(&out);
}

void inject_band(rehearsal *r, const char *why, const char *json)
{
    say(r, "INJECT %s: fake Band %s", why, json);
    check(r, tk_band_control(&r->w.band, json) == 200, "fake Band control %s", json);
}

int wait_log(rehearsal *r, const char *what, const char *pattern, int64_t after_ms,
             int timeout_ms)
{
    int64_t deadline = clock_mono_ms() + timeout_ms;
    while (!interrupted && clock_mono_ms() < deadline) {
        size_t len = 0;
        char *text = tk_read(r->w.agent_log, &len);
        for (char *line = text; line && *line;) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            int64_t at = 0;
            if (strlen(line) > 23) {
                char stamp[24];
                memcpy(stamp, line, 23);
                stamp[23] = '\0';
                clock_parse_iso(stamp, &at);
            }
            if (at >= after_ms && strstr(line, pattern)) {
                free(text);
                say(r, "agent.log shows %s", what);
                return 1;
            }
            line = nl ? nl + 1 : line + strlen(line);
        }
        free(text);
        sleep_ms(100);
    }
    return check(r, 0, "agent.log never showed %s (\"%s\") within %d ms", what, pattern,
                 timeout_ms);
}

state_t *load_state(rehearsal *r)
{
    state_store store;
    state_t *st = NULL;
    char err[ERR_BUFSZ];
    if (state_store_init(&store, r->w.state_dir, NULL, err) != ERR_OK ||
        state_load(&store, &st, err) != ERR_OK) {
        check(r, 0, "cannot read the run state: %s", err);
        return NULL;
    }
    return st;
}

void check_reports(rehearsal *r, const char *verdict)
{
    char want[64];
    snprintf(want, sizeof want, "**%s**", verdict);
    char *path = tk_path(r->w.state_dir, "evidence.md");
    char *md = tk_read(path, NULL);
    check(r, md && strstr(md, want), "evidence.md does not say %s", want);
    free(md);
    free(path);
    path = tk_path(r->w.state_dir, "junit.xml");
    char *argv[] = {"/usr/bin/xmllint", "--noout", "--schema", SMOKE_TEST_DATA "/junit.xsd",
                    path, NULL};
    tk_result res;
    tk_run(argv, NULL, 20000, &res);
    check(r, res.status == 0, "junit.xml fails the XSD: %s", res.output);
    tk_result_free(&res);
    free(path);
}

void finish_run(rehearsal *r, int want_cleanup, int want_teardown)
{
    step_phase(r, "cleanup", want_cleanup);
    step_phase(r, "report", 0);
    step_phase(r, "teardown", want_teardown);
    check_no_leak(r);
}

void check_no_leak(rehearsal *r)
{
    int agents = -1, rooms = -1;
    tk_band_stats(&r->w.band, &agents, &rooms);
    say(r, "fake Band: %d live agents, %d live rooms", agents, rooms);
    check(r, agents == 0 && rooms == 0, "resources leaked: %d agents, %d rooms", agents, rooms);
}

/* Every agent key the fake minted, so the scan looks for them too. */
static void learn_minted_keys(rehearsal *r)
{
    char *path = tk_path(r->w.band.dir, "minted.keys");
    char *text = tk_read(path, NULL);
    for (char *save = NULL, *k = text ? strtok_r(text, "\n", &save) : NULL; k;
         k = strtok_r(NULL, "\n", &save))
        scan_add_key(&r->canary, k);
    free(text);
    free(path);
}

/* Core files land in the crashing process's folder (core_pattern "core")
 * or wherever core_pattern says; the rehearsal runs its children in a
 * folder of its own and lets them dump (the hard limit), so a core from
 * any of them is found here. band-smoke must leave none: it sets its own
 * limit to 0, which the /proc sweep checks whatever core_pattern is. */
static char core_dir[W_PATH + 8];

static void expect_no_cores(rehearsal *r)
{
    struct rlimit lim;
    if (getrlimit(RLIMIT_CORE, &lim) == 0) {
        lim.rlim_cur = lim.rlim_max;
        setrlimit(RLIMIT_CORE, &lim);
    }
    snprintf(core_dir, sizeof core_dir, "%s/cwd", r->w.root);
    if (mkdir(core_dir, 0700) != 0 || chdir(core_dir) != 0)
        check(r, 0, "cannot run the children in %s", core_dir);
    char exe[PATH_MAX];
    if (realpath(r->w.band_smoke, exe))
        scan_watch_core_limit(&r->canary, exe);
}

static void prove_no_secret_leaked(rehearsal *r)
{
    learn_minted_keys(r);
    scan_stop(&r->canary);
    scan_tree(&r->canary, r->w.state_dir);
    scan_tree(&r->canary, r->w.workspace);
    scan_tree(&r->canary, core_dir);
    int cores = scan_cores(&r->canary, core_dir) + scan_cores(&r->canary, r->w.state_dir) +
                scan_cores(&r->canary, r->w.workspace);
    scan_text(&r->canary, "the output of band-smoke and sbx", run_all_output());
    say(r, "canary scan: %d keys, %ld /proc sweeps (%ld process images read, %ld seen "
           "unchanged), %ld core limits read (band-smoke's children), %d core files; state "
           "folder, workspace and working folder read; %d hits%s%s", r->canary.nkeys,
        r->canary.samples, r->canary.searched, r->canary.skipped, r->canary.core_checked, cores,
        r->canary.hits, r->canary.hits ? ": " : "", r->canary.first_hit);
    check(r, r->canary.hits == 0, "a secret leaked: %s", r->canary.first_hit);
}

int64_t rehearsal_ms(const rehearsal *r, int64_t real_ms)
{
    return tscale_apply(real_ms, r->scale);
}

/* SMOKE_TIME_SCALE of this process wins; else the stand-in's scale, or
 * real time for a real agent. */
static int choose_scale(rehearsal *r, char *text, size_t cap)
{
    const char *given = getenv(TSCALE_ENV);
    const char *pick = given && *given ? given : r->agent_cmd ? "1" : REHEARSAL_STANDIN_SCALE;
    char err[ERR_BUFSZ];
    if (tscale_parse(pick, &r->scale, err) != ERR_OK) {
        fprintf(stderr, "band-smoke-rehearsal: %s\n", err);
        return -1;
    }
    snprintf(text, cap, "%s", pick);
    return 0;
}

static const scenario *find_scenario(const char *name)
{
    for (const scenario *s = scenarios; s->name; s++)
        if (!strcmp(s->name, name))
            return s;
    return NULL;
}

static int usage(void)
{
    fprintf(stderr, "usage: band-smoke-rehearsal [--scenario NAME[,NAME...] [--jobs N]] "
                    "[--via ctest] "
                    "[--agent COMMAND] [--clean] "
                    "[--list]\n");
    return 2;
}

/* --scenario a,b,c: each name checked, then one driver each (group.h). */
static int run_group(char **argv, int name_at, int jobs)
{
    char *list = strdup(argv[name_at]), *names[GROUP_MAX];
    int n = 0, rc = 0;
    for (char *save = NULL, *s = strtok_r(list, ",", &save); s && rc == 0;
         s = strtok_r(NULL, ",", &save)) {
        if (!find_scenario(s) || n == GROUP_MAX)
            rc = usage();
        else
            names[n++] = s;
    }
    if (rc == 0)
        rc = group_run(argv, name_at, names, n, jobs);
    free(list);
    return rc;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *name = "main";
    int clean = 0, via_ctest = 0, name_at = 0, jobs = 0;
    static rehearsal r;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--scenario") && i + 1 < argc)
            name = argv[name_at = ++i];
        else if (!strcmp(argv[i], "--via") && i + 1 < argc && !strcmp(argv[i + 1], "ctest"))
            via_ctest = ++i;
        else if (!strcmp(argv[i], "--agent") && i + 1 < argc && argv[i + 1][0])
            r.agent_cmd = argv[++i];
        else if (!strcmp(argv[i], "--jobs") && i + 1 < argc &&
                 strspn(argv[i + 1], "0123456789") == strlen(argv[i + 1]) && argv[i + 1][0])
            jobs = atoi(argv[++i]); /* 0: all at once */
        else if (!strcmp(argv[i], "--clean"))
            clean = 1;
        else if (!strcmp(argv[i], "--list")) {
            for (const scenario *s = scenarios; s->name; s++)
                printf("%-20s %s\n", s->name, s->what);
            return 0;
        } else
            return usage();
    }
    if (strchr(name, ','))
        return run_group(argv, name_at, jobs);
    const scenario *sc = find_scenario(name);
    if (!sc)
        return usage();

    run_catch_stops(on_interrupt);
    /* A reader that goes away (`| head`) must not kill the driver before
     * world_close stops the fakes it started. */
    signal(SIGPIPE, SIG_IGN);

    r.started_ms = clock_mono_ms();
    char scale[32], window[64];
    if (choose_scale(&r, scale, sizeof scale) != 0)
        return 2;
    /* The Wi-Fi gate's window: the whole outage, then the SDK's recovery. */
    snprintf(window, sizeof window, "SMOKE_RECONNECT_WINDOW_S=%lld",
             (long long)((rehearsal_ms(&r, WIFI_STALL_MS + RECOVER_MS) + SLACK_MS + 999) / 1000));
    world_opts opts = {.e2e_timeout_s = sc->e2e_timeout_s ? sc->e2e_timeout_s
                                                          : REHEARSAL_E2E_TIMEOUT_S};
    /* The launch waits E2E_TIMEOUT for the readiness line, and a Python
     * SDK's cold imports take seconds on a loaded machine. */
    if (r.agent_cmd && opts.e2e_timeout_s < REHEARSAL_AGENT_E2E_TIMEOUT_S)
        opts.e2e_timeout_s = REHEARSAL_AGENT_E2E_TIMEOUT_S;
    opts.extra_env[0] = window;
    opts.extra_env[1] = sc->env;
    opts.plain_http = sc->plain_http;
    opts.time_scale = scale;
    opts.agent_cmd = r.agent_cmd;
    opts.heartbeat_timeout_ms = rehearsal_ms(&r, PLATFORM_HEARTBEAT_TIMEOUT_MS);
    if (sc->production) {
        opts.rest_url = "https://app.band.ai";
        opts.ws_url = "wss://app.band.ai/api/v1/socket/websocket";
    }
    r.via_ctest = via_ctest != 0;
    say(&r, "rehearsal %s%s: %s", sc->name, r.via_ctest ? " (via ctest)" : "", sc->what);
    say(&r, "agent: %s; time scale %s (%s)", r.agent_cmd ? r.agent_cmd : "the C stand-in", scale,
        window);
    if (world_open(&r.w, &opts) != 0) {
        world_close(&r.w);
        return 1;
    }
    r.w.clean = clean;
    say(&r, "fake Band at %s, fake sbx %s, sandbox %s, state %s", r.w.band.rest_url,
        r.w.sbx_bin, r.w.sandbox, r.w.state_dir);
    scan_init(&r.canary, r.w.canary, r.w.fake_agent);
    expect_no_cores(&r);
    scan_start(&r.canary);

    if (!r.via_ctest || via_ctest_open(&r) == 0)
        sc->run(&r);

    if (interrupted) {
        scan_stop(&r.canary);
        world_close(&r.w);
        printf("rehearsal %s: interrupted by %s; every process it started was stopped\n",
               sc->name, sig_name(interrupted));
        return 128 + interrupted;
    }
    prove_no_secret_leaked(&r);
    world_close(&r.w);

    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    double secs = (clock_mono_ms() - r.started_ms) / 1000.0;
    printf("rehearsal %s%s: %s, %d checks, %d failed; %.1f s wall; peak RSS %ld KiB "
           "(driver), %ld KiB (largest child)\n", sc->name, r.via_ctest ? " (via ctest)" : "",
           r.failures ? "FAIL" : "PASS", r.checks, r.failures, secs, self.ru_maxrss,
           kids.ru_maxrss);
    printf("%d passed, %d failed\n", r.checks - r.failures, r.failures);
    return r.failures ? 1 : 0;
}
