/* probe: the marker round trip, against the fake Band server.
 *
 * Two kinds of agent answer the marker:
 * - the stand-in for the SDK agent (tests/bin/fake-agent), started as a
 *   child with its four BAND_* variables in its own environment, for the
 *   round trip the smoke really makes;
 * - a responder forked by the test, which polls /messages/next with the
 *   agent's key and misbehaves on purpose: acks a wrong token, marks the
 *   message processed without replying, fails it, drops every socket,
 *   sends garbage frames.
 * Then band-smoke itself runs the initial and after-sleep-wake phases
 * through its command line against a prepared run.
 * Loopback only; every child is killed and reaped before a case returns.
 */
#include "band_rest.h"
#include "clock.h"
#include "config.h"
#include "platform.h"
#include "probe.h"
#include "redact.h"
#include "state.h"
#include "tk.h"
#include "tk_band.h"
#include "tk_sbx.h"
#include "tk_run.h"
#include "tk_wait.h"
#include "unit.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CANARY "canary-user-key-8b4e2d6f0a1c"
#define AGENT_NAME "e2e-band-probe001-sandbox"
#define CHILD_DEADLINE_MS 60000 /* a responder never outlives this, even orphaned */

typedef struct world {
    tk_band band;
    int up;
    char *dir;
    config cfg;
    band_new_agent agent; /* api_key: the agent's, for the responder and fake-agent */
    char room[BAND_ID_SZ];
    band_profile me;      /* the user the agent mentions back */
    probe_target target;
    pid_t child;
    FILE *progress;       /* what probe_run shows while it waits */
} world;

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int world_open(world *w)
{
    memset(w, 0, sizeof *w);
    redact_clear(); /* every world mints a key; the registry holds 32 */
    redact_add_secret(CANARY);
    w->dir = tk_tmpdir("probe");
    w->progress = tmpfile();
    if (!w->progress)
        abort();
    if (!UNIT_CHECK(tk_band_start(&w->band, CANARY) == 0, "fake Band started"))
        return 0;
    w->up = 1;
    tk_band_config(&w->band, 10, &w->cfg); /* the fake holds CANARY as its user key */

    band_client *user = NULL;
    char err[ERR_BUFSZ] = "";
    err_code rc = band_client_new(w->band.rest_url, CANARY, NULL, &user, err);
    if (rc == ERR_OK)
        rc = band_register_agent(user, AGENT_NAME, "probe test agent", &w->agent, err);
    if (rc == ERR_OK)
        rc = band_create_chat(user, "probe test room", w->room, err);
    if (rc == ERR_OK)
        rc = band_add_participant(user, w->room, w->agent.id, "member", err);
    if (rc == ERR_OK)
        rc = band_get_profile(user, &w->me, err);
    band_client_free(user);
    w->target = (probe_target){w->room, w->agent.id, w->agent.name};
    return UNIT_CHECK(rc == ERR_OK, "agent and room: %s", err);
}

static void stop_child(world *w)
{
    if (w->child <= 0)
        return;
    kill(w->child, SIGTERM);
    if (tk_wait_child(w->child, 5000) == -1) {
        kill(w->child, SIGKILL);
        waitpid(w->child, NULL, 0);
    }
    w->child = 0;
}

static void world_close(world *w)
{
    stop_child(w);
    if (w->up)
        tk_band_stop(&w->band);
    fclose(w->progress);
    tk_rmtree(w->dir);
    free(w->dir);
}

/* What probe_run printed while waiting. */
static char *progress_text(world *w)
{
    fflush(w->progress);
    long n = ftell(w->progress);
    char *text = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
    rewind(w->progress);
    if (n > 0 && fread(text, 1, (size_t)n, w->progress) != (size_t)n)
        text[0] = '\0';
    fseek(w->progress, 0, SEEK_END);
    return text;
}

static int clean(const char *what, const char *text)
{
    return UNIT_CHECK(!strstr(text, CANARY) && !redact_has_secret(text, strlen(text)),
                      "a key in %s: %s", what, text);
}

static err_code probe(world *w, probe_outcome *out, char *err)
{
    err[0] = '\0';
    err_code rc = probe_run(&w->cfg, &w->target, w->progress, out, err);
    clean("the error", err);
    clean("the detail", out->detail);
    char *shown = progress_text(w);
    clean("the progress output", shown);
    free(shown);
    return rc;
}

static int is_token(const char *s)
{
    if (strlen(s) != 12)
        return 0;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return 0;
    return 1;
}

/* ---- the responder: an agent that misbehaves on purpose ------------------ */

typedef enum answer {
    ANSWER_RIGHT,   /* the SDK agent's reply */
    ANSWER_WRONG,   /* acks another token */
    ANSWER_SILENT,  /* marks it processed, replies nothing */
    ANSWER_FAIL,    /* marks it failed, every time */
    ANSWER_FLAKY,   /* fails it once, then answers right */
    ANSWER_DROP,    /* drops every socket and answers nothing */
    ANSWER_GARBAGE, /* garbage frames to every socket, then the right reply */
} answer;

static void child_control(world *w, const char *json)
{
    long status = 0;
    free(tk_band_http(w->band.control_url, "POST", "/_fake/control", NULL, json, &status, NULL));
}

/* "sandbox-ack:<the marker's token>", or another token when told to lie. */
static void ack_for(const char *content, answer how, char *ack, size_t cap)
{
    const char *token = strstr(content, "marker:");
    token = token ? token + 7 : "";
    if (how == ANSWER_WRONG)
        token = "000000000000";
    snprintf(ack, cap, "SANDBOX-ACK:%.*s", (int)strcspn(token, " \t\r\n"), token);
}

static void respond(world *w, band_client *agent, const band_message *m, answer how, int seen)
{
    char err[ERR_BUFSZ], ack[128], id[BAND_ID_SZ];
    band_mention to_user = {w->me.id, NULL, w->me.handle};
    band_agent_mark_processing(agent, w->room, m->id, err);
    if (how == ANSWER_FAIL || (how == ANSWER_FLAKY && seen == 1)) {
        band_agent_mark_failed(agent, w->room, m->id, "boom: the responder fails on purpose", err);
        return;
    }
    if (how == ANSWER_DROP) {
        child_control(w, "{\"action\":\"drop_ws\"}");
        return;
    }
    if (how == ANSWER_GARBAGE)
        child_control(w, "{\"action\":\"garbage\"}");
    if (how != ANSWER_SILENT) {
        ack_for(m->content, how, ack, sizeof ack);
        band_agent_send_message(agent, w->room, ack, &to_user, 1, id, err);
    }
    band_agent_mark_processed(agent, w->room, m->id, err);
}

static void responder_loop(world *w, answer how)
{
    band_client *agent = NULL;
    char err[ERR_BUFSZ], last[BAND_ID_SZ] = "";
    int seen = 0;
    if (band_client_new(w->band.rest_url, w->agent.api_key, NULL, &agent, err) != ERR_OK)
        _exit(2);
    int64_t end = clock_mono_ms() + CHILD_DEADLINE_MS;
    while (clock_mono_ms() < end) {
        band_message m = {0};
        int found = 0;
        if (band_agent_next_message(agent, w->room, &m, &found, err) == ERR_OK && found &&
            !(how == ANSWER_DROP && seen)) {
            seen = strcmp(last, m.id) == 0 ? seen + 1 : 1;
            snprintf(last, sizeof last, "%s", m.id);
            if (how != ANSWER_FAIL || seen == 1)
                respond(w, agent, &m, how, seen);
        }
        band_message_clear(&m);
        nap_ms(50);
    }
    band_client_free(agent);
}

/* Forks the responder; it dies with the test (PDEATHSIG) or at its deadline. */
static void start_responder(world *w, answer how)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        abort();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        responder_loop(w, how);
        _exit(0);
    }
    w->child = pid;
}

/* ---- the stand-in agent -------------------------------------------------- */

static int file_has(const char *path, const char *needle)
{
    char *text = tk_read(path, NULL);
    int found = text && strstr(text, needle);
    free(text);
    return found;
}

/* Starts fake-agent with the agent's key in its own environment only, its
 * log in the world's folder, and waits for its readiness line. */
static int start_stand_in(world *w)
{
    char *bin = tk_bin("fake-agent"), *log = tk_path(w->dir, "agent.log");
    int ok = UNIT_CHECK(access(bin, X_OK) == 0, "%s is built", bin);
    fflush(NULL);
    pid_t pid = ok ? fork() : -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd < 0 || dup2(fd, 2) < 0)
            _exit(126);
        setenv("BAND_AGENT_ID", w->agent.id, 1);
        setenv("BAND_API_KEY", w->agent.api_key, 1);
        setenv("BAND_REST_URL", w->band.rest_url, 1);
        setenv("BAND_WS_URL", w->band.ws_url, 1);
        unsetenv("BAND_API_KEY_USER");
        execl(bin, bin, (char *)NULL);
        _exit(127);
    }
    w->child = pid > 0 ? pid : 0;
    int64_t end = clock_mono_ms() + 15000;
    while (ok && !file_has(log, "Agent started:") && clock_mono_ms() < end &&
           waitpid(pid, NULL, WNOHANG) == 0)
        nap_ms(50);
    ok = ok && UNIT_CHECK(file_has(log, "Agent started:"), "fake-agent ready (log %s)", log);
    free(bin);
    free(log);
    return ok;
}

/* ---- probes --------------------------------------------------------------- */

static int64_t median(int64_t *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int64_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return v[n / 2];
}

static void test_passes_with_the_stand_in_agent(void)
{
    world w;
    if (!world_open(&w) || !start_stand_in(&w))
        goto out;
    enum { RUNS = 5 };
    int64_t latency[RUNS];
    int passed = 0;
    for (int i = 0; i < RUNS; i++) {
        probe_outcome out;
        char err[ERR_BUFSZ], ack[64];
        int64_t before = clock_wall_ms(NULL);
        err_code rc = probe(&w, &out, err);
        snprintf(ack, sizeof ack, "sandbox-ack:%s", out.marker);
        passed += UNIT_CHECK(rc == ERR_OK && out.passed, "probe %d: %s %s / %s", i, err_str(rc),
                             err, out.detail);
        UNIT_CHECK(is_token(out.marker) && strstr(out.detail, ack), "marker %s, detail %s",
                   out.marker, out.detail);
        UNIT_CHECK(out.latency_ms >= 0 && out.latency_ms < 10000 && out.at_ms >= before &&
                       out.at_ms <= clock_wall_ms(NULL),
                   "latency %lld, at %lld", (long long)out.latency_ms, (long long)out.at_ms);
        latency[i] = out.latency_ms;
    }
    if (passed == RUNS) {
        int64_t mid = median(latency, RUNS); /* sorts */
        printf("\n    probe round trip through fake-agent: median %lld ms over %d runs "
               "(min %lld, max %lld)\n", (long long)mid, RUNS, (long long)latency[0],
               (long long)latency[RUNS - 1]);
    }
    /* the agent's socket stays; each observer's is gone once its close lands */
    long sockets = -1;
    for (int i = 0; i < 40 && (sockets = tk_band_stat(&w.band, "ws_connections")) != 1; i++)
        nap_ms(50);
    UNIT_CHECK(sockets == 1, "only the agent's socket is left: %ld", sockets);
out:
    world_close(&w);
}

static void test_passes_with_a_responder(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    start_responder(&w, ANSWER_RIGHT);
    probe_outcome a, b;
    char err[ERR_BUFSZ];
    err_code rc = probe(&w, &a, err);
    UNIT_CHECK(rc == ERR_OK && a.passed && a.latency_ms >= 0, "probe: %s %s", err, a.detail);
    rc = probe(&w, &b, err);
    UNIT_CHECK(rc == ERR_OK && b.passed, "a second probe in the same room: %s %s", err, b.detail);
    UNIT_CHECK(strcmp(a.marker, b.marker) != 0, "a fresh token each time");
out:
    world_close(&w);
}

static void test_wrong_ack_fails_the_assertion(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    start_responder(&w, ANSWER_WRONG);
    probe_outcome out;
    char err[ERR_BUFSZ], want[128];
    err_code rc = probe(&w, &out, err);
    snprintf(want, sizeof want, "no text message contained any of ['sandbox-ack:%s']:\n",
             out.marker);
    UNIT_CHECK(rc == ERR_OK && !out.passed, "a verdict, not passed: %s", err_str(rc));
    UNIT_CHECK(strncmp(out.detail, want, strlen(want)) == 0 &&
                   strstr(out.detail, "SANDBOX-ACK:000000000000"),
               "assertion text: %s", out.detail);
    UNIT_CHECK(out.latency_ms >= 0, "the verdict was reached: latency %lld",
               (long long)out.latency_ms);
out:
    world_close(&w);
}

static void test_no_agent_times_out(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    w.cfg.e2e_timeout_s = 3;
    probe_outcome out;
    char err[ERR_BUFSZ], head[160], tail[160];
    int64_t t0 = clock_mono_ms();
    err_code rc = probe(&w, &out, err);
    int64_t took = clock_mono_ms() - t0;
    snprintf(head, sizeof head, "%s did not process message ", w.agent.id);
    snprintf(tail, sizeof tail, " in room %s; last delivery status: none", w.room);
    UNIT_CHECK(rc == ERR_TIMEOUT && !out.passed && out.latency_ms == -1, "timeout: %s %s",
               err_str(rc), err);
    UNIT_CHECK(strncmp(out.detail, head, strlen(head)) == 0 && strstr(out.detail, tail) &&
                   strcmp(out.detail, err) == 0,
               "detail: %s", out.detail);
    UNIT_CHECK(took >= 3000 && took < 9000, "bounded by E2E_TIMEOUT: %lld ms", (long long)took);
    char *shown = progress_text(&w);
    UNIT_CHECK(strstr(shown, "waiting for " AGENT_NAME " to answer marker ") &&
                   strstr(shown, "deadline 3.0 s") && strstr(shown, "no answer after"),
               "the wait was shown: %s", shown);
    free(shown);
out:
    world_close(&w);
}

static void test_processed_without_reply(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    w.cfg.e2e_timeout_s = 2;
    start_responder(&w, ANSWER_SILENT);
    probe_outcome out;
    char err[ERR_BUFSZ], want[256];
    err_code rc = probe(&w, &out, err);
    snprintf(want, sizeof want, " in room %s but captured no reply from it", w.room);
    UNIT_CHECK(rc == ERR_TIMEOUT && strstr(out.detail, " processed message ") &&
                   strstr(out.detail, want),
               "processed, no reply: %s %s", err_str(rc), out.detail);
out:
    world_close(&w);
}

static void test_failed_delivery_is_transient(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    start_responder(&w, ANSWER_FLAKY);
    probe_outcome out;
    char err[ERR_BUFSZ];
    err_code rc = probe(&w, &out, err);
    UNIT_CHECK(rc == ERR_OK && out.passed, "failed, then processed: %s %s", err, out.detail);
    stop_child(&w);

    w.cfg.e2e_timeout_s = 2;
    start_responder(&w, ANSWER_FAIL);
    rc = probe(&w, &out, err);
    UNIT_CHECK(rc == ERR_TIMEOUT &&
                   strstr(out.detail, "last delivery status: failed (last error: boom: the "
                                      "responder fails on purpose)"),
               "failed for good: %s %s", err_str(rc), out.detail);
out:
    world_close(&w);
}

static void test_dropped_socket_fails(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    start_responder(&w, ANSWER_DROP);
    probe_outcome out;
    char err[ERR_BUFSZ];
    int64_t t0 = clock_mono_ms();
    err_code rc = probe(&w, &out, err);
    UNIT_CHECK(rc == ERR_NETWORK && !out.passed &&
                   strncmp(out.detail, "the observer's WebSocket dropped mid-probe: ", 44) == 0,
               "dropped: %s %s", err_str(rc), out.detail);
    UNIT_CHECK(clock_mono_ms() - t0 < 8000, "failed at once, not at the deadline");
    UNIT_CHECK(is_token(out.marker) && out.latency_ms == -1, "the attempt is still described");
out:
    world_close(&w);
}

/* The real agent, slowed down by the fake (every REST answer held
 * SLOW_REST_MS), and every socket dropped while the probe waits: the
 * probe's own send ends at about SLOW_REST_MS, the agent's reply cannot
 * come before about three of them (mark, reply, mark), the drop lands in
 * between, at DROP_AT_MS. */
#define SLOW_REST_MS 800
#define DROP_AT_MS 1400
static void test_dropped_socket_with_a_slow_agent(void)
{
    world w;
    if (!world_open(&w) || !start_stand_in(&w))
        goto out;
    char delay[64];
    snprintf(delay, sizeof delay, "{\"action\":\"delay\",\"ms\":%d}", SLOW_REST_MS);
    UNIT_CHECK(tk_band_control(&w.band, delay) == 200, "delay");
    fflush(NULL);
    pid_t dropper = fork();
    if (dropper == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        nap_ms(DROP_AT_MS);
        child_control(&w, "{\"action\":\"drop_ws\"}");
        _exit(0);
    }
    probe_outcome out;
    char err[ERR_BUFSZ];
    err_code rc = probe(&w, &out, err);
    if (dropper > 0)
        waitpid(dropper, NULL, 0);
    UNIT_CHECK(rc == ERR_NETWORK && !out.passed &&
                   strstr(out.detail, "the observer's WebSocket dropped mid-probe: "),
               "dropped while the agent was slow: %s %s", err_str(rc), out.detail);
    tk_band_control(&w.band, "{\"action\":\"delay\",\"ms\":0}");
out:
    world_close(&w);
}

static void test_garbage_frames_do_not_crash(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    start_responder(&w, ANSWER_GARBAGE);
    probe_outcome out;
    char err[ERR_BUFSZ];
    err_code rc = probe(&w, &out, err);
    UNIT_CHECK(rc == ERR_OK && out.passed, "garbage then the reply: %s %s", err, out.detail);
out:
    world_close(&w);
}

static void test_refusals_before_any_request(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    long rest = tk_band_stat(&w.band, "rest_calls"), ups = tk_band_stat(&w.band, "upgrade_attempts");
    probe_outcome out;
    char err[ERR_BUFSZ];
    config prod = w.cfg;
    snprintf(prod.ws_url, sizeof prod.ws_url, "wss://APP.band.ai:443/api/v1/socket/websocket/");
    err_code rc = probe_run(&prod, &w.target, w.progress, &out, err);
    UNIT_CHECK(rc == ERR_PRODUCTION && !out.passed && out.detail[0] && out.latency_ms == -1,
               "production WebSocket: %s %s", err_str(rc), out.detail);
    prod = w.cfg;
    snprintf(prod.rest_url, sizeof prod.rest_url, "https://app.band.ai");
    rc = probe_run(&prod, &w.target, w.progress, &out, err);
    UNIT_CHECK(rc == ERR_PRODUCTION, "production REST: %s", err_str(rc));
    probe_target none = {"", w.agent.id, w.agent.name};
    rc = probe_run(&w.cfg, &none, w.progress, &out, err);
    UNIT_CHECK(rc == ERR_USAGE && strstr(out.detail, "no agent or no room"), "no room: %s",
               out.detail);
    UNIT_CHECK(tk_band_stat(&w.band, "rest_calls") == rest &&
                   tk_band_stat(&w.band, "upgrade_attempts") == ups,
               "nothing reached Band");

    probe_target stranger = {"00000000-0000-0000-0000-00000000dead", w.agent.id, w.agent.name};
    w.target = stranger;
    rc = probe(&w, &out, err);
    UNIT_CHECK(rc == ERR_PROTOCOL && strstr(out.detail, "observing chat_room:"),
               "a room the user is not in: %s %s", err_str(rc), out.detail);
out:
    world_close(&w);
}

/* ---- band-smoke's own probe phases ---------------------------------------- */

typedef struct cli {
    char state_dir[1100], rest[200], ws[200], timeout[32];
    char *env[10];
} cli;

static void cli_env(cli *c, world *w, int timeout_s)
{
    snprintf(c->state_dir, sizeof c->state_dir, "SMOKE_STATE_DIR=%s/state", w->dir);
    snprintf(c->rest, sizeof c->rest, "BAND_REST_URL=%s", w->band.rest_url);
    snprintf(c->ws, sizeof c->ws, "BAND_WS_URL=%s", w->band.ws_url);
    snprintf(c->timeout, sizeof c->timeout, "E2E_TIMEOUT=%d", timeout_s);
    char *env[] = {c->state_dir, "SMOKE_ENV_FILE=/nonexistent/band-smoke-test.env",
                   "BAND_API_KEY_USER=" CANARY, c->rest, c->ws, c->timeout, "BAND_BASE_URL=",
                   NULL};
    memcpy(c->env, env, sizeof env);
}

static int smoke(cli *c, tk_result *r, const char *phase, const char *flag)
{
    const char *bin = getenv("BAND_SMOKE");
    char *argv[] = {(char *)(bin ? bin : SMOKE_BINARY_DIR "/band-smoke"), "phase", (char *)phase,
                    (char *)flag, NULL};
    tk_run(argv, c->env, 60000, r);
    clean("band-smoke's output", r->output);
    return r->status;
}

/* A run whose agent is live (this test process stands for its launcher)
 * and whose phases up to `through` passed, as phases 01-04 leave it. */
static state_store prepare_run(world *w, const char *const *passed, size_t n)
{
    state_store store;
    char err[ERR_BUFSZ], *dir = tk_path(w->dir, "state");
    state_t *st = NULL;
    if (state_store_init(&store, dir, NULL, err) != ERR_OK || !(st = state_new(&store)))
        abort();
    int64_t now = clock_wall_ms(NULL);
    for (size_t i = 0; i < n; i++)
        state_set_phase(st, passed[i], RESULT_PASSED, now, 5, "prepared by the test");
    snprintf(st->room_id, sizeof st->room_id, "%s", w->room);
    snprintf(st->agent_id, sizeof st->agent_id, "%s", w->agent.id);
    snprintf(st->agent_name, sizeof st->agent_name, "%s", AGENT_NAME);
    st->agent_process = (state_agent_process){.generation = 1, .pid = (int)getpid(),
                                              .start_token = plat_proc_start_token(getpid()),
                                              .launched_at_ms = now, .ready_at_ms = now};
    if (state_save(&store, st, err) != ERR_OK)
        abort();
    state_free(st);
    free(dir);
    return store;
}

static state_t *load_run(const state_store *store)
{
    state_t *st = NULL;
    char err[ERR_BUFSZ];
    UNIT_CHECK(state_load(store, &st, err) == ERR_OK, "state: %s", err);
    return st;
}

static void test_cli_initial_phase(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    const char *done[] = {"start", "preflight", "sandbox", "launch"};
    state_store store = prepare_run(&w, done, 4);
    cli c;
    cli_env(&c, &w, 10);
    start_responder(&w, ANSWER_RIGHT);
    tk_result r;
    int status = smoke(&c, &r, "initial", NULL);
    UNIT_CHECK(status == 0 && strstr(r.output, "PASSED phase.05.initial") &&
                   strstr(r.output, "answered in"),
               "initial: exit %d: %s", status, r.output);
    tk_result_free(&r);
    state_t *st = load_run(&store);
    const state_probe *p = st ? state_latest_probe(st, "initial") : NULL;
    UNIT_CHECK(p && p->passed && is_token(p->marker) && p->latency_ms >= 0 && p->generation == 1,
               "the initial probe recorded as passed");
    state_free(st);

    /* no agent answers now: the attempt is recorded as failed all the same */
    stop_child(&w);
    cli_env(&c, &w, 1);
    status = smoke(&c, &r, "initial", "--again");
    UNIT_CHECK(status == 1 && strstr(r.output, "FAILED phase.05.initial") &&
                   strstr(r.output, "did not process message"),
               "failed probe: exit %d: %s", status, r.output);
    tk_result_free(&r);
    st = load_run(&store);
    p = st ? state_latest_probe(st, "initial") : NULL;
    UNIT_CHECK(p && !p->passed && strstr(p->detail, "did not process") && p->latency_ms == -1 &&
                   st && state_probe_attempts(st, "initial") == 2,
               "the failed attempt is the latest of two");
    char *json = st ? state_to_json(st) : NULL;
    UNIT_CHECK(json && !strstr(json, CANARY) && !strstr(json, w.agent.api_key), "no key in the state");
    free(json);
    state_free(st);
out:
    world_close(&w);
}

/* The prerequisites re-checked before probing fail the phase and are
 * recorded as the attempt, before any request. */
static void test_cli_rechecks_before_probing(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    const char *done[] = {"start", "preflight", "sandbox", "launch"};
    state_store store = prepare_run(&w, done, 4);
    long rest = tk_band_stat(&w.band, "rest_calls");
    cli c;
    cli_env(&c, &w, 10);
    snprintf(c.rest, sizeof c.rest, "BAND_REST_URL=https://app.band.ai/");
    tk_result r;
    int status = smoke(&c, &r, "initial", NULL);
    UNIT_CHECK(status == 1 && strstr(r.output, "FAILED phase.05.initial") &&
                   strstr(r.output, "production"),
               "production REST URL: exit %d: %s", status, r.output);
    tk_result_free(&r);

    char err[ERR_BUFSZ];
    state_t *st = load_run(&store);
    if (st) {
        st->room_id[0] = '\0';
        UNIT_CHECK(state_save(&store, st, err) == ERR_OK, "save: %s", err);
    }
    state_free(st);
    cli_env(&c, &w, 10);
    status = smoke(&c, &r, "initial", NULL);
    UNIT_CHECK(status == 1 && strstr(r.output, "has no room to probe") &&
                   strstr(r.output, "-R '^phase\\.04\\.launch$'"),
               "no room: exit %d: %s", status, r.output);
    tk_result_free(&r);
    UNIT_CHECK(tk_band_stat(&w.band, "rest_calls") == rest, "no request reached Band");
    st = load_run(&store);
    UNIT_CHECK(st && state_probe_attempts(st, "initial") == 2 &&
                   !state_latest_probe(st, "initial")->passed &&
                   state_latest_probe(st, "initial")->marker[0] == '\0',
               "both refusals recorded as failed attempts with no marker");
    state_free(st);
out:
    world_close(&w);
}

static void test_cli_after_sleep_wake_drafts_the_observation(void)
{
    world w;
    if (!world_open(&w))
        goto out;
    const char *done[] = {"start", "preflight", "sandbox", "launch", "initial",
                          "wifi-checkpoint", "after-wifi-reconnect", "sleep-checkpoint"};
    state_store store = prepare_run(&w, done, 8);
    char err[ERR_BUFSZ];
    state_t *st = load_run(&store);
    if (!st)
        goto out;
    int64_t now = clock_wall_ms(NULL);
    for (int i = 0; i < 2; i++) {
        state_probe p = {.passed = 1, .at_ms = now, .latency_ms = 30, .generation = 1};
        snprintf(p.label, sizeof p.label, "%s", i ? "after-wifi-reconnect" : "initial");
        state_add_probe(st, &p);
    }
    st->phase = RUN_AWAITING_SLEEP;
    snprintf(st->sandbox_name, sizeof st->sandbox_name, "probe-sbx");
    st->evidence.sleep.checkpoint = clock_read(NULL);
    st->evidence.sleep.slept_ms = -1;
    st->evidence.sleep.confirmed_at_ms = now + 1000; /* `confirm sleep-wake` after the checkpoint */
    UNIT_CHECK(state_save(&store, st, err) == ERR_OK, "save: %s", err);
    state_free(st);

    /* After the wake the phase also checks `sbx ls` still lists the sandbox. */
    tk_sbx sbx;
    tk_sbx_setup(&sbx, "balanced");
    proc_result made;
    tk_sbx_run(&sbx, &made, "create", "--name", "probe-sbx", "shell", sbx.workspace, NULL);
    proc_result_free(&made);
    char sbx_bin[1100];
    snprintf(sbx_bin, sizeof sbx_bin, "SBX_BIN=%s", sbx.sbx);
    cli c;
    cli_env(&c, &w, 10);
    c.env[7] = sbx_bin;
    c.env[8] = (char *)sbx.env[0]; /* FAKE_SBX_STATE */
    c.env[9] = NULL;
    start_responder(&w, ANSWER_RIGHT);
    tk_result r;
    int status = smoke(&c, &r, "after-sleep-wake", NULL);
    UNIT_CHECK(status == 0 && strstr(r.output, "PASSED phase.09.after-sleep-wake"),
               "after-sleep-wake: exit %d: %s", status, r.output);
    tk_result_free(&r);
    st = load_run(&store);
    const char *draft = st ? state_residual(st, "sleep_wake") : "";
    UNIT_CHECK(strncmp(draft, "(drafted by band-smoke) the operator confirmed a sleep/wake",
                       59) == 0 &&
                   strstr(draft, "generation 1) is still running, the same process") &&
                   strstr(draft, "after-sleep-wake probe passed in"),
               "draft: %s", draft);
    if (st) {
        state_set_residual(st, "sleep_wake", "the operator's own words");
        UNIT_CHECK(state_save(&store, st, err) == ERR_OK, "save: %s", err);
    }
    state_free(st);

    status = smoke(&c, &r, "after-sleep-wake", "--again");
    UNIT_CHECK(status == 0, "again: exit %d: %s", status, r.output);
    tk_result_free(&r);
    st = load_run(&store);
    UNIT_CHECK(st && strcmp(state_residual(st, "sleep_wake"), "the operator's own words") == 0,
               "an observation already written is never replaced");
    UNIT_CHECK(st && strcmp(st->evidence.sleep.sandbox_status, "running") == 0,
               "sandbox status after the wake: %s", st ? st->evidence.sleep.sandbox_status : "");
    state_free(st);

    /* The known sbx failure: the sandbox is gone after the sleep. */
    tk_sbx_run(&sbx, &made, "_fault", "vanish", "probe-sbx", NULL);
    proc_result_free(&made);
    status = smoke(&c, &r, "after-sleep-wake", "--again");
    UNIT_CHECK(status == 1 && strstr(r.output, "sandbox probe-sbx is missing from `sbx ls`"),
               "a vanished sandbox: exit %d: %s", status, r.output);
    tk_result_free(&r);
    st = load_run(&store);
    UNIT_CHECK(st && strcmp(st->evidence.sleep.sandbox_status, "missing") == 0,
               "the finding is recorded");
    state_free(st);
    tk_sbx_teardown(&sbx);
out:
    world_close(&w);
}

const unit_case unit_cases[] = {
    {"passes_with_a_responder", test_passes_with_a_responder},
    {"passes_with_the_stand_in_agent", test_passes_with_the_stand_in_agent},
    {"wrong_ack_fails_the_assertion", test_wrong_ack_fails_the_assertion},
    {"no_agent_times_out", test_no_agent_times_out},
    {"processed_without_reply", test_processed_without_reply},
    {"failed_delivery_is_transient", test_failed_delivery_is_transient},
    {"dropped_socket_fails", test_dropped_socket_fails},
    {"dropped_socket_with_a_slow_agent", test_dropped_socket_with_a_slow_agent},
    {"garbage_frames_do_not_crash", test_garbage_frames_do_not_crash},
    {"refusals_before_any_request", test_refusals_before_any_request},
    {"cli_initial_phase", test_cli_initial_phase},
    {"cli_rechecks_before_probing", test_cli_rechecks_before_probing},
    {"cli_after_sleep_wake_drafts_the_observation", test_cli_after_sleep_wake_drafts_the_observation},
    {NULL, NULL},
};
