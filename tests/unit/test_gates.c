/* gates: every gate of design sections 3 and 5, decided from prepared run
 * states, prepared agent.log files and a fake clock. */
#include "gates.h"
#include "platform.h"
#include "tk.h"
#include "unit.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define T0 1796212800000LL /* 2026-12-02T12:00:00Z */

static clock_reading fake_now;

static void read_fake(void *ud, clock_reading *out)
{
    (void)ud;
    *out = fake_now;
}

typedef struct fixture {
    smoke_ctx ctx;
    char *dir;
} fixture;

static void setup(fixture *f)
{
    memset(f, 0, sizeof *f);
    fake_now = (clock_reading){T0, 1000000, 2000000};
    f->dir = tk_tmpdir("gates");
    f->ctx.clock = (clock_src){read_fake, NULL};
    f->ctx.lock_fd = -1;
    f->ctx.out = stdout;
    char err[ERR_BUFSZ];
    if (state_store_init(&f->ctx.store, f->dir, &f->ctx.clock, err) != ERR_OK)
        abort();
    agentlog_patterns_default(&f->ctx.patterns);
    snprintf(f->ctx.agent_log, sizeof f->ctx.agent_log, "%s/agent.log", f->dir);
    f->ctx.st = state_new(&f->ctx.store);
    f->ctx.cfg.reconnect_window_s = 300;
}

static void teardown(fixture *f)
{
    state_free(f->ctx.st);
    tk_rmtree(f->dir);
    free(f->dir);
}

static void pass(fixture *f, phase_id id, int64_t at)
{
    state_set_phase(f->ctx.st, phase_get(id)->name, RESULT_PASSED, at, 10, "");
}

static void probe(fixture *f, const char *label, int passed, int generation, int64_t at)
{
    state_probe p = {0};
    snprintf(p.label, sizeof p.label, "%s", label);
    snprintf(p.marker, sizeof p.marker, "0123456789ab");
    snprintf(p.detail, sizeof p.detail, passed ? "ok" : "no reply within 120 s");
    p.passed = passed;
    p.at_ms = at;
    p.latency_ms = 42;
    p.generation = generation;
    state_add_probe(f->ctx.st, &p);
}

/* An agent that is alive: this very test process stands in for it. */
static void agent_alive(fixture *f, int generation)
{
    state_agent_process *ap = &f->ctx.st->agent_process;
    ap->generation = generation;
    ap->pid = (int)getpid();
    ap->start_token = plat_proc_start_token(getpid());
    ap->launched_at_ms = T0;
    ap->ready_at_ms = T0 + 1000;
}

static int closed_with(fixture *f, phase_id id, const char *needle)
{
    gate_verdict g;
    gate_check(&f->ctx, id, &g);
    if (g.open)
        return UNIT_CHECK(0, "%s: gate open, expected closed with \"%s\"",
                          phase_get(id)->ctest_name, needle);
    return UNIT_CHECK(strstr(g.reason, needle) != NULL, "%s: reason \"%s\" lacks \"%s\"",
                      phase_get(id)->ctest_name, g.reason, needle);
}

static int is_open(fixture *f, phase_id id)
{
    gate_verdict g;
    gate_check(&f->ctx, id, &g);
    return UNIT_CHECK(g.open, "%s: expected open, closed: %s", phase_get(id)->ctest_name,
                      g.reason);
}

/* A run ready for the Wi-Fi checkpoint: everything up to initial passed. */
static void through_initial(fixture *f)
{
    for (phase_id id = PH_START; id <= PH_LAUNCH; id++)
        pass(f, id, T0 + id);
    agent_alive(f, 1);
    probe(f, "initial", 1, 1, T0 + 5000);
    pass(f, PH_INITIAL, T0 + 5000);
}

static void test_no_run(void)
{
    fixture f;
    setup(&f);
    state_free(f.ctx.st);
    f.ctx.st = NULL;
    is_open(&f, PH_START);
    is_open(&f, PH_REPORT);
    for (phase_id id = PH_PREFLIGHT; id <= PH_DAEMON_RESTART; id++)
        closed_with(&f, id, "no run has started yet");
    closed_with(&f, PH_CLEANUP, "no run has started yet");
    closed_with(&f, PH_TEARDOWN, "no run has started yet");
    teardown(&f);
}

static void test_prerequisite_chain(void)
{
    fixture f;
    setup(&f);
    closed_with(&f, PH_PREFLIGHT, "phase.01.start has not passed");
    pass(&f, PH_START, T0);
    is_open(&f, PH_PREFLIGHT);
    closed_with(&f, PH_SANDBOX, "phase.02.preflight has not passed");
    state_set_phase(f.ctx.st, "preflight", RESULT_FAILED, T0, 1, "sbx missing");
    closed_with(&f, PH_SANDBOX, "(failed)");
    pass(&f, PH_PREFLIGHT, T0);
    is_open(&f, PH_SANDBOX);
    closed_with(&f, PH_LAUNCH, "phase.03.sandbox");
    pass(&f, PH_SANDBOX, T0);
    is_open(&f, PH_LAUNCH);
    closed_with(&f, PH_INITIAL, "phase.04.launch");
    teardown(&f);
}

static void test_agent_running(void)
{
    fixture f;
    setup(&f);
    for (phase_id id = PH_START; id <= PH_LAUNCH; id++)
        pass(&f, id, T0);
    closed_with(&f, PH_INITIAL, "no agent has been launched");

    pid_t child = fork();
    if (child == 0)
        _exit(0);
    uint64_t token = plat_proc_start_token(child);
    waitpid(child, NULL, 0);
    state_agent_process *ap = &f.ctx.st->agent_process;
    ap->generation = 2;
    ap->pid = (int)child;
    ap->start_token = token;
    snprintf(ap->exit_detail, sizeof ap->exit_detail, "exited with status 1");
    closed_with(&f, PH_INITIAL, "no longer running: exited with status 1");

    agent_alive(&f, 2);
    f.ctx.st->agent_process.start_token += 1; /* same pid, another incarnation */
    closed_with(&f, PH_INITIAL, "no longer running");

    agent_alive(&f, 2);
    f.ctx.st->agent_process.ready_at_ms = 0;
    closed_with(&f, PH_INITIAL, "never logged its readiness line");
    agent_alive(&f, 2);
    is_open(&f, PH_INITIAL);
    teardown(&f);
}

static void test_probe_prerequisites(void)
{
    fixture f;
    setup(&f);
    for (phase_id id = PH_START; id <= PH_LAUNCH; id++)
        pass(&f, id, T0);
    agent_alive(&f, 1);
    closed_with(&f, PH_WIFI_CHECKPOINT, "the 'initial' probe has not run");
    probe(&f, "initial", 0, 1, T0 + 100);
    closed_with(&f, PH_WIFI_CHECKPOINT, "latest 'initial' probe failed (no reply within");
    probe(&f, "initial", 1, 1, T0 + 200);
    is_open(&f, PH_WIFI_CHECKPOINT);
    closed_with(&f, PH_SLEEP_CHECKPOINT, "'after-wifi-reconnect' probe has not run");
    closed_with(&f, PH_DAEMON_RESTART, "'after-sleep-wake' probe has not run");
    probe(&f, "after-sleep-wake", 1, 1, T0 + 300);
    is_open(&f, PH_DAEMON_RESTART);
    teardown(&f);
}

static void test_wifi_checkpoint_holds_later_phases(void)
{
    fixture f;
    setup(&f);
    through_initial(&f);
    pass(&f, PH_WIFI_CHECKPOINT, T0 + 6000);
    f.ctx.st->phase = RUN_AWAITING_WIFI;
    for (phase_id id = PH_SLEEP_CHECKPOINT; id < PH__COUNT; id++)
        closed_with(&f, id, "waits at the Wi-Fi checkpoint");
    closed_with(&f, PH_CLEANUP, "phase\\.07\\.after-wifi-reconnect");
    /* The resume phase is not held: its own evidence gate speaks. */
    closed_with(&f, PH_AFTER_WIFI, "no WebSocket disconnect");
    /* A failed resume step releases the hold: the failure ends the run
     * (cleanup next), and only the failed step itself may be retried. */
    state_set_phase(f.ctx.st, "after-wifi-reconnect", RESULT_FAILED, T0 + 7000, 5, "no reply");
    is_open(&f, PH_CLEANUP);
    closed_with(&f, PH_SLEEP_CHECKPOINT, "phase.07.after-wifi-reconnect failed (no reply)");
    closed_with(&f, PH_AFTER_WIFI, "no WebSocket disconnect");
    /* A failed run is not held either. */
    f.ctx.st->phase = RUN_FAILED;
    is_open(&f, PH_CLEANUP);
    closed_with(&f, PH_AFTER_WIFI, "marked failed and is never continued");
    teardown(&f);
}

static void write_log(fixture *f, const char *text)
{
    tk_write(f->ctx.agent_log, text);
}

static void test_wifi_evidence(void)
{
    fixture f;
    setup(&f);
    through_initial(&f);
    pass(&f, PH_WIFI_CHECKPOINT, T0 + 6000); /* 12:00:06 */
    f.ctx.st->phase = RUN_AWAITING_WIFI;

    closed_with(&f, PH_AFTER_WIFI, "no WebSocket disconnect since the Wi-Fi checkpoint");
    write_log(&f,
              "2026-12-02 12:00:01,000 INFO band.agent: Agent started: a (band-sdk 1.6.0)\n"
              "2026-12-02 12:00:02,000 WARNING band.platform.link: WebSocket disconnected: x\n"
              "2026-12-02 12:00:03,000 INFO band.platform.link: WebSocket reconnected \xe2\x80\x94 "
              "reconciling room state\n");
    closed_with(&f, PH_AFTER_WIFI, "no WebSocket disconnect since the Wi-Fi checkpoint");

    write_log(&f,
              "2026-12-02 12:00:01,000 INFO band.agent: Agent started: a (band-sdk 1.6.0)\n"
              "2026-12-02 12:00:10,500 WARNING band.platform.link: WebSocket disconnected: "
              "sent 1011 (internal error) keepalive ping timeout\n");
    closed_with(&f, PH_AFTER_WIFI, "no reconnect after it yet");

    /* The window passes with no reconnect: the evidence proves a failure. */
    fake_now.wall_ms = T0 + 10500 + 300000;
    gate_verdict g;
    gate_check(&f.ctx, PH_AFTER_WIFI, &g);
    UNIT_CHECK(!g.open && g.fails, "no reconnect past the window: open %d fails %d", g.open,
               g.fails);
    UNIT_CHECK(strstr(g.reason, "did not recover from the Wi-Fi cycle") != NULL, "reason: %s",
               g.reason);
    UNIT_CHECK(f.ctx.st->evidence.wifi.disconnect_at_ms == T0 + 10500, "disconnect recorded");
    fake_now.wall_ms = T0 + 10500 + 299999;
    gate_check(&f.ctx, PH_AFTER_WIFI, &g);
    UNIT_CHECK(!g.open && !g.fails, "inside the window it only waits");
    fake_now.wall_ms = T0;

    write_log(&f,
              "2026-12-02 12:00:01,000 INFO band.agent: Agent started: a (band-sdk 1.6.0)\n"
              "2026-12-02 12:00:10,500 WARNING band.platform.link: WebSocket disconnected: "
              "sent 1011 (internal error) keepalive ping timeout\n"
              "2026-12-02 12:00:41,250 INFO band.platform.link: WebSocket reconnected \xe2\x80\x94 "
              "reconciling room state\n");
    if (is_open(&f, PH_AFTER_WIFI)) {
        const state_wifi_evidence *ev = &f.ctx.st->evidence.wifi;
        UNIT_CHECK(ev->disconnect_at_ms == T0 + 10500, "disconnect at %lld",
                   (long long)ev->disconnect_at_ms);
        UNIT_CHECK(ev->reconnect_at_ms == T0 + 41250, "reconnect at %lld",
                   (long long)ev->reconnect_at_ms);
        UNIT_CHECK(ev->generation == 1, "generation %d", ev->generation);
        UNIT_CHECK(strstr(ev->disconnect_line, "keepalive ping timeout") != NULL,
                   "disconnect line: %s", ev->disconnect_line);
    }

    /* A relaunched agent is not the one that passed the initial probe. */
    agent_alive(&f, 2);
    closed_with(&f, PH_AFTER_WIFI, "is not the one that passed the initial probe");
    teardown(&f);
}

static void test_sleep_evidence(void)
{
    fixture f;
    setup(&f);
    through_initial(&f);
    probe(&f, "after-wifi-reconnect", 1, 1, T0 + 50000);
    f.ctx.st->phase = RUN_AWAITING_SLEEP;
    pass(&f, PH_SLEEP_CHECKPOINT, T0 + 60000);
    state_sleep_evidence *ev = &f.ctx.st->evidence.sleep;
    ev->checkpoint = (clock_reading){T0 + 60000, 1000000, 2000000};

    /* Ten seconds awake, no suspend: not enough. */
    fake_now = (clock_reading){T0 + 70000, 1010000, 2010000};
    closed_with(&f, PH_AFTER_SLEEP, "no host sleep of 30 s or more");
    closed_with(&f, PH_AFTER_SLEEP, "confirm sleep-wake");
    closed_with(&f, PH_DAEMON_RESTART, "waits at the Sleep/wake checkpoint");

    /* 29.9 s suspended: still not enough. */
    fake_now = (clock_reading){T0 + 100000, 1010000, 2039900};
    closed_with(&f, PH_AFTER_SLEEP, "no host sleep of 30 s or more");

    /* 40 s suspended: measured. */
    fake_now = (clock_reading){T0 + 110000, 1010000, 2050000};
    if (is_open(&f, PH_AFTER_SLEEP)) {
        UNIT_CHECK(strcmp(ev->method, "measured") == 0, "method %s", ev->method);
        UNIT_CHECK(ev->slept_ms == 40000, "slept %lld", (long long)ev->slept_ms);
    }

    /* A reboot in between measures nothing; a confirmation from before the
     * checkpoint does not count; one after it does. */
    fake_now = (clock_reading){T0 + 110000, 5000, 6000};
    ev->method[0] = '\0';
    ev->confirmed_at_ms = T0 + 59000;
    closed_with(&f, PH_AFTER_SLEEP, "unknown (host rebooted?)");
    ev->confirmed_at_ms = T0 + 61000;
    if (is_open(&f, PH_AFTER_SLEEP))
        UNIT_CHECK(strcmp(ev->method, "operator") == 0, "method %s", ev->method);
    teardown(&f);
}

static void test_finished_and_stale_runs(void)
{
    fixture f;
    setup(&f);
    pass(&f, PH_START, T0);
    f.ctx.st->phase = RUN_COMPLETED;
    closed_with(&f, PH_PREFLIGHT, "was marked completed and is never continued");
    is_open(&f, PH_CLEANUP);
    closed_with(&f, PH_START, "cleanup, report and teardown end it before a new run starts");
    pass(&f, PH_CLEANUP, T0 + 1);
    closed_with(&f, PH_START, "has ended (completed)");
    closed_with(&f, PH_PREFLIGHT, "has ended (completed)");
    pass(&f, PH_TEARDOWN, T0 + 2);
    is_open(&f, PH_START);
    closed_with(&f, PH_PREFLIGHT, "is finished (completed)");
    state_set_phase(f.ctx.st, "cleanup", RESULT_NONE, 0, 0, "");
    state_set_phase(f.ctx.st, "teardown", RESULT_NONE, 0, 0, "");

    f.ctx.st->phase = RUN_STARTED;
    f.ctx.st->updated_at_ms = T0;
    fake_now.wall_ms = T0 + STATE_STALE_MS + 1;
    closed_with(&f, PH_PREFLIGHT, "idle for over 12 h");
    fake_now.wall_ms = T0 + STATE_STALE_MS - 1;
    is_open(&f, PH_PREFLIGHT);
    teardown(&f);
}

static void test_teardown_needs_cleanup_or_failure(void)
{
    fixture f;
    setup(&f);
    pass(&f, PH_START, T0);
    closed_with(&f, PH_TEARDOWN, "nothing to tear down");
    snprintf(f.ctx.st->sandbox_created_by, sizeof f.ctx.st->sandbox_created_by, "%s",
             f.ctx.st->run_id);
    pass(&f, PH_DAEMON_RESTART, T0);
    closed_with(&f, PH_TEARDOWN, "cleanup not run");
    state_set_phase(f.ctx.st, "cleanup", RESULT_FAILED, T0, 1, "reap failed");
    closed_with(&f, PH_TEARDOWN, "cleanup failed");
    f.ctx.st->phase = RUN_FAILED;
    is_open(&f, PH_TEARDOWN);
    f.ctx.st->phase = RUN_COMPLETED;
    pass(&f, PH_CLEANUP, T0 + 1);
    is_open(&f, PH_TEARDOWN);
    teardown(&f);
}

const unit_case unit_cases[] = {
    {"no_run", test_no_run},
    {"prerequisite_chain", test_prerequisite_chain},
    {"agent_running", test_agent_running},
    {"probe_prerequisites", test_probe_prerequisites},
    {"wifi_checkpoint_holds_later_phases", test_wifi_checkpoint_holds_later_phases},
    {"wifi_evidence", test_wifi_evidence},
    {"sleep_evidence", test_sleep_evidence},
    {"finished_and_stale_runs", test_finished_and_stale_runs},
    {"teardown_needs_cleanup_or_failure", test_teardown_needs_cleanup_or_failure},
    {NULL, NULL},
};
