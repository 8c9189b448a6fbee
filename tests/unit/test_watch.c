/* watch: `band-smoke watch` at both checkpoints, driven by a written
 * agent.log, a saved run state and a fake clock; it must say what happened
 * when, end by itself, and leave state.json byte for byte as it was. */
#include "watch.h"

#include "gates.h"
#include "phases.h"
#include "platform.h"
#include "tk.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define T0 1796212800000LL /* 2026-12-02T12:00:00Z */
#define CHECKPOINT_AT (T0 + 60000) /* 12:01:00 */

static clock_reading fake_now;

static void read_fake(void *ud, clock_reading *out)
{
    (void)ud;
    *out = fake_now;
}

typedef struct fixture {
    smoke_ctx ctx;
    char *dir;
    char out_path[1100];
} fixture;

static void pass(state_t *st, phase_id id, int64_t at)
{
    state_set_phase(st, phase_get(id)->name, RESULT_PASSED, at, 10, "");
}

/* A run waiting at `held` (checkpoint passed at 12:01:00), with a live
 * agent (this test process stands in for it) that passed the initial probe. */
static void setup(fixture *f, run_phase held)
{
    memset(f, 0, sizeof *f);
    setenv("TZ", "UTC", 1); /* the watch prints the operator's local time */
    tzset();
    fake_now = (clock_reading){CHECKPOINT_AT, 1000000, 2000000};
    f->dir = tk_tmpdir("watch");
    snprintf(f->out_path, sizeof f->out_path, "%s/out.txt", f->dir);
    f->ctx.clock = (clock_src){read_fake, NULL};
    f->ctx.lock_fd = -1;
    f->ctx.out = fopen(f->out_path, "w+");
    f->ctx.cfg.reconnect_window_s = 300;
    char err[ERR_BUFSZ];
    if (!f->ctx.out || state_store_init(&f->ctx.store, f->dir, &f->ctx.clock, err) != ERR_OK)
        abort();
    agentlog_patterns_default(&f->ctx.patterns);
    snprintf(f->ctx.agent_log, sizeof f->ctx.agent_log, "%s/agent.log", f->dir);

    state_t *st = state_new(&f->ctx.store);
    for (phase_id id = PH_START; id <= PH_INITIAL; id++)
        pass(st, id, T0 + id);
    st->agent_process = (state_agent_process){.generation = 1, .pid = (int)getpid(),
                                              .launched_at_ms = T0, .ready_at_ms = T0 + 1000};
    st->agent_process.start_token = plat_proc_start_token(getpid());
    state_probe p = {.passed = 1, .at_ms = T0 + 5000, .latency_ms = 42, .generation = 1};
    snprintf(p.label, sizeof p.label, "initial");
    state_add_probe(st, &p);
    pass(st, PH_WIFI_CHECKPOINT, CHECKPOINT_AT);
    st->phase = held;
    if (held == RUN_AWAITING_SLEEP) {
        snprintf(p.label, sizeof p.label, "after-wifi-reconnect");
        state_add_probe(st, &p);
        pass(st, PH_AFTER_WIFI, CHECKPOINT_AT);
        pass(st, PH_SLEEP_CHECKPOINT, CHECKPOINT_AT);
        st->evidence.sleep.checkpoint = fake_now;
        st->evidence.sleep.slept_ms = -1;
    }
    if (state_save(&f->ctx.store, st, err) != ERR_OK)
        abort();
    state_free(st);
}

static void teardown(fixture *f)
{
    ctx_close(&f->ctx);
    fclose(f->ctx.out);
    tk_rmtree(f->dir);
    free(f->dir);
}

static void write_log(fixture *f, const char *text)
{
    tk_write(f->ctx.agent_log, text);
}

/* Runs the watch with a short deadline; returns its exit code, *said what
 * it printed (caller frees). */
static int watch(fixture *f, int timeout_ms, char **said)
{
    watch_opts o = {timeout_ms, 20};
    int rc = watch_run(&f->ctx, &o);
    fflush(f->ctx.out);
    *said = tk_read(f->out_path, NULL);
    return rc;
}

static char *state_bytes(fixture *f)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/state.json", f->dir);
    return tk_read(path, NULL);
}

#define LOG_READY "2026-12-02 12:00:01,000 INFO band.agent: Agent started: a (band-sdk 1.6.0)\n"
#define LOG_DROP                                                                            \
    "2026-12-02 12:01:41,000 WARNING band.platform.link: WebSocket disconnected: "          \
    "sent 1011 (internal error) keepalive ping timeout\n"
#define LOG_BACK                                                                            \
    "2026-12-02 12:01:53,100 INFO band.platform.link: WebSocket reconnected \xe2\x80\x94 "  \
    "reconciling room state\n"

static void says(const char *said, const char *needle)
{
    UNIT_CHECK(said && strstr(said, needle) != NULL, "watch did not say \"%s\"; it said:\n%s",
               needle, said ? said : "(nothing)");
}

/* The watch at checkpoint `held` with `log` written and `now` on the
 * clocks: its exit code, the lines it must say, one it must not, and
 * state.json byte for byte as it was (the watch never records anything). */
typedef struct watch_case {
    run_phase held;
    const char *log;
    clock_reading now;
    int timeout_ms, want_rc;
    const char *says[4];
    const char *never;
} watch_case;

static void run_case(const watch_case *c)
{
    fixture f;
    setup(&f, c->held);
    write_log(&f, c->log);
    fake_now = c->now;
    char *before = state_bytes(&f), *said = NULL;
    int rc = watch(&f, c->timeout_ms, &said);
    UNIT_CHECK(rc == c->want_rc, "exit %d, expected %d; said:\n%s", rc, c->want_rc, said);
    for (int i = 0; i < 4 && c->says[i]; i++)
        says(said, c->says[i]);
    UNIT_CHECK(!c->never || !strstr(said, c->never), "said \"%s\":\n%s", c->never, said);
    char *after = state_bytes(&f);
    UNIT_CHECK(before && after && !strcmp(before, after), "the watch changed state.json");
    free(before);
    free(after);
    free(said);
    teardown(&f);
}

#define AT(wall) ((clock_reading){(wall), 1000000, 2000000})
/* Woken: 5 s awake, 67 s in total since the checkpoint: 62 s asleep. */
#define WOKE_AFTER_62S ((clock_reading){CHECKPOINT_AT + 67000, 1005000, 2067000})

static void test_wifi_cycle_complete(void)
{
    run_case(&(watch_case){RUN_AWAITING_WIFI, LOG_READY LOG_DROP LOG_BACK, AT(T0 + 120000),
                           2000, 0,
                           {"WebSocket disconnected at 12:01:41 (41.0 s after the checkpoint)",
                            "WebSocket reconnected at 12:01:53, outage 12.1 s: resume with "
                            "ctest --test-dir ",
                            "-R '^phase\\.07\\.after-wifi-reconnect$'"},
                           "turn Wi-Fi back on"});
}

static void test_wifi_waits_and_gives_up(void)
{
    /* Inside the reconnect window: the watch waits, then says what is missing. */
    run_case(&(watch_case){RUN_AWAITING_WIFI, LOG_READY LOG_DROP, AT(T0 + 150000), 300, 1,
                           {"(41.0 s after the checkpoint): turn Wi-Fi back on now",
                            "watch: gave up after 300 ms; still missing: agent.log shows the "
                            "WebSocket disconnect"},
                           "reconnected at"});
}

static void test_wifi_no_disconnect_yet(void)
{
    run_case(&(watch_case){RUN_AWAITING_WIFI, LOG_READY, AT(CHECKPOINT_AT), 200, 1,
                           {"Turn Wi-Fi off now",
                            "still missing: agent.log shows no WebSocket disconnect since the "
                            "Wi-Fi checkpoint"},
                           "disconnected at"});
}

static void test_wifi_window_passed_is_a_failure(void)
{
    run_case(&(watch_case){RUN_AWAITING_WIFI, LOG_READY LOG_DROP, AT(T0 + 101000 + 301000),
                           2000, 1,
                           {"FAILED: the agent did not recover from the Wi-Fi cycle",
                            "record it with: ctest --test-dir "},
                           NULL});
}

static void test_sleep_measured_no_drop(void)
{
    run_case(&(watch_case){RUN_AWAITING_SLEEP, LOG_READY, WOKE_AFTER_62S, 2000, 0,
                           {"the clocks measured a sleep of 1 min 2 s",
                            "the sleep is measured (1 min 2 s); agent.log shows no WebSocket "
                            "drop",
                            "-R '^phase\\.09\\.after-sleep-wake$'"},
                           "under 30 s"});
}

static void test_sleep_with_reconnect(void)
{
    run_case(&(watch_case){RUN_AWAITING_SLEEP, LOG_READY LOG_DROP LOG_BACK, WOKE_AFTER_62S,
                           2000, 0,
                           {"WebSocket disconnected at 12:01:41",
                            "WebSocket reconnected at 12:01:53, outage 12.1 s",
                            "the agent's WebSocket reconnected: resume with"},
                           NULL});
}

static void test_sleep_too_short(void)
{
    run_case(&(watch_case){RUN_AWAITING_SLEEP, LOG_READY,
                           (clock_reading){CHECKPOINT_AT + 20000, 1010000, 2020000}, 200, 1,
                           {"a sleep of 10.0 s (under 30 s: sleep it again for about a minute)",
                            "still missing: no host sleep of 30 s or more measured"},
                           "resume with"});
}

static void test_nothing_to_watch(void)
{
    fixture f;
    setup(&f, RUN_STARTED);
    char *said = NULL;
    int rc = watch(&f, 200, &said);
    UNIT_CHECK(rc == 1, "exit %d", rc);
    says(said, "not at the Wi-Fi or the sleep checkpoint; nothing to watch");
    free(said);
    teardown(&f);
}

/* Marked waiting by hand (record-phase) without the checkpoint passing. */
static void test_checkpoint_not_passed(void)
{
    fixture f;
    setup(&f, RUN_AWAITING_WIFI);
    char err[ERR_BUFSZ];
    if (UNIT_CHECK(ctx_load(&f.ctx, err) == ERR_OK, "load: %s", err)) {
        state_set_phase(f.ctx.st, phase_get(PH_WIFI_CHECKPOINT)->name, RESULT_FAILED,
                        CHECKPOINT_AT, 10, "x");
        UNIT_CHECK(state_save(&f.ctx.store, f.ctx.st, err) == ERR_OK, "save: %s", err);
    }
    char *said = NULL;
    int rc = watch(&f, 200, &said);
    UNIT_CHECK(rc == 1, "exit %d", rc);
    says(said, "but phase.06.wifi-checkpoint has not passed; nothing to watch");
    free(said);
    teardown(&f);
}

static void test_usage(void)
{
    fixture f;
    setup(&f, RUN_STARTED);
    char *bad[][3] = {{"--timeout", NULL, NULL}, {"--timeout", "0", NULL},
                      {"--timeout", "5s", NULL}, {"--follow", NULL, NULL}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int argc = bad[i][1] ? 2 : 1;
        UNIT_CHECK(watch_main(&f.ctx, argc, bad[i]) == 2, "watch %s %s accepted", bad[i][0],
                   bad[i][1] ? bad[i][1] : "");
    }
    teardown(&f);
}

const unit_case unit_cases[] = {
    {"wifi_cycle_complete", test_wifi_cycle_complete},
    {"wifi_waits_and_gives_up", test_wifi_waits_and_gives_up},
    {"wifi_no_disconnect_yet", test_wifi_no_disconnect_yet},
    {"wifi_window_passed_is_a_failure", test_wifi_window_passed_is_a_failure},
    {"sleep_measured_no_drop", test_sleep_measured_no_drop},
    {"sleep_with_reconnect", test_sleep_with_reconnect},
    {"sleep_too_short", test_sleep_too_short},
    {"nothing_to_watch", test_nothing_to_watch},
    {"checkpoint_not_passed", test_checkpoint_not_passed},
    {"usage", test_usage},
    {NULL, NULL},
};
