/* lifecycle: every transition of docs/lifecycle.md, one table row each.
 *
 * Each row prepares a run in one lifecycle state (written straight into a
 * temporary state folder), runs one band-smoke command as an operator
 * would (the real binary, nothing configured, the fake sbx as SBX_BIN),
 * and checks the exit code, what it printed, and the lifecycle state the
 * run is in afterwards. Then, for every state, the command `next:` names
 * is run and must not be refused; and a finished run must come out of
 * every command byte for byte as it went in.
 */
#include "engine.h"
#include "lifecycle.h"
#include "state.h"
#include "tk.h"
#include "tk_run.h"
#include "tk_sbx.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HOUR_MS (3600LL * 1000)

typedef enum prep {
    P_NONE,
    P_OPEN,           /* start passed, nothing exists */
    P_OPEN_FAILED,    /* ... and preflight failed */
    P_ACTIVE,         /* our sandbox exists; through initial */
    P_ACTIVE_DONE,    /* ... through daemon-restart */
    P_FAILING,        /* ACTIVE and the initial probe failed */
    P_CLOSING,        /* ACTIVE and marked failed */
    P_CLOSING_OPEN,   /* OPEN and marked failed (nothing to undo) */
    P_ENDED,          /* CLOSING and cleanup passed */
    P_FINISHED,       /* ENDED and teardown passed */
    P_STALE,          /* OPEN, idle for 13 h */
    P__COUNT
} prep;

static const char *const prep_names[P__COUNT] = {
    "none", "open", "open-failed", "active", "active-done", "failing", "closing",
    "closing-open", "ended", "finished", "stale",
};

typedef struct world {
    char *dir;
    tk_sbx sbx;
    char env_dir[1100], env_sbx[1100];
    char *env[24];
} world;

static void world_open(world *w)
{
    memset(w, 0, sizeof *w);
    w->dir = tk_tmpdir("life");
    tk_sbx_setup(&w->sbx, NULL);
    snprintf(w->env_dir, sizeof w->env_dir, "SMOKE_STATE_DIR=%s", w->dir);
    snprintf(w->env_sbx, sizeof w->env_sbx, "SBX_BIN=%s", w->sbx.sbx);
    int n = 0;
    w->env[n++] = w->env_dir;
    w->env[n++] = w->env_sbx;
    w->env[n++] = "SMOKE_ENV_FILE=/nonexistent/band-smoke-life.env";
    const char *unset[] = {"BAND_API_KEY_USER=", "BAND_REST_URL=", "BAND_BASE_URL=",
                           "BAND_WS_URL=", "SBX_SANDBOX=", "SBX_WORKSPACE=", NULL};
    for (int i = 0; unset[i]; i++)
        w->env[n++] = (char *)unset[i];
    for (size_t i = 0; i < w->sbx.nenv && n < 23; i++)
        w->env[n++] = (char *)w->sbx.env[i];
    w->env[n] = NULL;
}

static void world_close(world *w)
{
    tk_sbx_teardown(&w->sbx);
    tk_rmtree(w->dir);
    free(w->dir);
}

static int smoke(world *w, tk_result *r, const char *a, const char *b, const char *c)
{
    return tk_smoke(w->env, r, a, b, c);
}

/* ---- preparing a run in each state -------------------------------------- */

static void pass(state_t *st, phase_id id, int64_t at)
{
    state_set_phase(st, phase_get(id)->name, RESULT_PASSED, at, 5, "prepared by the test");
}

static void add_probe(state_t *st, const char *label, int passed, int64_t at)
{
    state_probe p = {.passed = passed, .at_ms = at, .latency_ms = 20, .generation = 1};
    snprintf(p.label, sizeof p.label, "%s", label);
    snprintf(p.marker, sizeof p.marker, "a1b2c3d4e5f6");
    snprintf(p.detail, sizeof p.detail, passed ? "sandbox-ack" : "no reply within 120 s");
    state_add_probe(st, &p);
}

/* Written as text, not with state_save, so a stale run keeps its old time. */
static void write_state(world *w, const state_t *st)
{
    char *json = state_to_json(st);
    char *path = tk_path(w->dir, "state.json");
    tk_write(path, json);
    free(path);
    free(json);
}

static void prepare(world *w, prep p)
{
    if (p == P_NONE)
        return;
    state_store store;
    char err[ERR_BUFSZ];
    if (state_store_init(&store, w->dir, NULL, err) != ERR_OK)
        abort();
    state_t *st = state_new(&store);
    int64_t now = clock_wall_ms(NULL), t = now - 60000;
    pass(st, PH_START, t);
    if (p == P_OPEN_FAILED)
        state_set_phase(st, "preflight", RESULT_FAILED, t + 1, 5, "SBX_SANDBOX is unset");
    if (p >= P_ACTIVE && p != P_CLOSING_OPEN && p != P_STALE) {
        for (phase_id id = PH_PREFLIGHT; id <= PH_LAUNCH; id++)
            pass(st, id, t + id);
        /* A sandbox this suite made, already gone from sbx: teardown finds
         * nothing to remove, so no row depends on a real sandbox. */
        snprintf(st->sandbox_created_by, sizeof st->sandbox_created_by, "%s", st->run_id);
        add_probe(st, "initial", p != P_FAILING, t + 10);
        state_set_phase(st, "initial", p == P_FAILING ? RESULT_FAILED : RESULT_PASSED, t + 10,
                        5, p == P_FAILING ? "no reply within 120 s" : "ok");
    }
    if (p == P_ACTIVE_DONE) {
        for (phase_id id = PH_WIFI_CHECKPOINT; id <= PH_DAEMON_RESTART; id++)
            pass(st, id, t + 20 + id);
        add_probe(st, "after-wifi-reconnect", 1, t + 30);
        add_probe(st, "after-sleep-wake", 1, t + 31);
        add_probe(st, "after-daemon-restart", 1, t + 32);
        st->phase = RUN_DAEMON_RESTART;
    }
    if (p == P_CLOSING || p == P_CLOSING_OPEN || p == P_ENDED || p == P_FINISHED)
        st->phase = RUN_FAILED;
    if (p == P_ENDED || p == P_FINISHED)
        pass(st, PH_CLEANUP, t + 40);
    if (p == P_FINISHED) {
        pass(st, PH_REPORT, t + 41);
        pass(st, PH_TEARDOWN, t + 42);
    }
    st->started_at_ms = t;
    st->updated_at_ms = p == P_STALE ? now - 13 * HOUR_MS : now;
    write_state(w, st);
    state_free(st);
}

static state_t *load(world *w)
{
    state_store store;
    state_t *st = NULL;
    char err[ERR_BUFSZ];
    if (state_store_init(&store, w->dir, NULL, err) != ERR_OK)
        abort();
    err_code rc = state_load(&store, &st, err);
    UNIT_CHECK(rc == ERR_OK || rc == ERR_NOTFOUND, "state unreadable: %s", err);
    return st;
}

static life_state life_now(world *w, char *run_id, size_t cap)
{
    state_t *st = load(w);
    life_state s = life_of(st, clock_wall_ms(NULL), NULL);
    if (run_id)
        snprintf(run_id, cap, "%s", st ? st->run_id : "");
    state_free(st);
    return s;
}

/* ---- the transitions ---------------------------------------------------- */

typedef struct transition {
    prep from;
    const char *cmd[3];   /* band-smoke arguments */
    int exit;
    life_state to;
    const char *says;     /* in the output; NULL = not checked */
    int same_run;         /* 1: the run id must not change; 0: a new run */
} transition;

static const transition table[] = {
    /* NONE */
    {P_NONE, {"phase", "start"}, 0, LIFE_OPEN, "PASSED phase.01.start", 0},
    {P_NONE, {"phase", "preflight"}, 77, LIFE_NONE, "SKIPPED: no run has started yet", 1},
    {P_NONE, {"phase", "cleanup"}, 77, LIFE_NONE, "SKIPPED: no run has started yet", 1},
    {P_NONE, {"phase", "teardown"}, 77, LIFE_NONE, "SKIPPED: no run has started yet", 1},
    {P_NONE, {"phase", "report"}, 0, LIFE_NONE, "nothing to report", 1},
    {P_NONE, {"record-phase", "failed"}, 1, LIFE_NONE, "no run yet", 1},
    /* OPEN: a failure keeps it resumable; nothing to clean up or tear down */
    {P_OPEN, {"phase", "start"}, 0, LIFE_OPEN, "already passed", 1},
    {P_OPEN, {"phase", "preflight"}, 1, LIFE_OPEN, "FAILED phase.02.preflight", 1},
    {P_OPEN_FAILED, {"phase", "preflight"}, 1, LIFE_OPEN, "FAILED phase.02.preflight", 1},
    {P_OPEN_FAILED, {"phase", "sandbox"}, 77, LIFE_OPEN, "phase.02.preflight has not passed", 1},
    {P_OPEN_FAILED, {"phase", "cleanup"}, 77, LIFE_OPEN, "nothing to clean up", 1},
    {P_OPEN_FAILED, {"phase", "teardown"}, 77, LIFE_OPEN, "nothing to tear down", 1},
    {P_OPEN_FAILED, {"phase", "report"}, 0, LIFE_OPEN, "PASSED phase.12.report", 1},
    {P_OPEN, {"record-phase", "failed"}, 0, LIFE_CLOSING, "phase failed", 1},
    /* ACTIVE */
    {P_ACTIVE, {"phase", "start"}, 0, LIFE_ACTIVE, "already passed", 1},
    {P_ACTIVE, {"phase", "cleanup"}, 77, LIFE_ACTIVE, "is in progress", 1},
    {P_ACTIVE, {"phase", "teardown"}, 77, LIFE_ACTIVE, "cleanup not run", 1},
    {P_ACTIVE, {"phase", "preflight", "--again"}, 1, LIFE_FAILING, "FAILED", 1},
    {P_ACTIVE, {"record-phase", "failed"}, 0, LIFE_CLOSING, "phase failed", 1},
    {P_ACTIVE_DONE, {"phase", "cleanup"}, 0, LIFE_ENDED, "run completed", 1},
    /* FAILING: only the failed phase may run again; cleanup ends it */
    {P_FAILING, {"phase", "start"}, 0, LIFE_FAILING, "already passed", 1},
    {P_FAILING, {"phase", "wifi-checkpoint"}, 77, LIFE_FAILING, "so the run ends", 1},
    {P_FAILING, {"phase", "daemon-restart"}, 77, LIFE_FAILING, "so the run ends", 1},
    {P_FAILING, {"phase", "teardown"}, 77, LIFE_FAILING, "cleanup not run", 1},
    {P_FAILING, {"phase", "cleanup"}, 0, LIFE_ENDED, "run failed", 1},
    {P_FAILING, {"record-phase", "failed"}, 0, LIFE_CLOSING, "phase failed", 1},
    /* CLOSING: never continued, never provisions, never restarted */
    {P_CLOSING, {"phase", "start"}, 77, LIFE_CLOSING, "before a new run starts", 1},
    {P_CLOSING, {"phase", "launch"}, 0, LIFE_CLOSING, "already passed", 1},
    {P_CLOSING, {"phase", "launch", "--again"}, 77, LIFE_CLOSING, "never continued", 1},
    {P_CLOSING, {"phase", "wifi-checkpoint"}, 77, LIFE_CLOSING, "never continued", 1},
    {P_CLOSING, {"phase", "cleanup"}, 0, LIFE_ENDED, "run failed", 1},
    {P_CLOSING, {"phase", "teardown"}, 0, LIFE_CLOSING, "PASSED phase.13.teardown", 1},
    {P_CLOSING, {"record-phase", "failed"}, 0, LIFE_CLOSING, "nothing changed", 1},
    {P_CLOSING, {"record-phase", "started"}, 1, LIFE_CLOSING, "never rewritten", 1},
    {P_CLOSING_OPEN, {"phase", "cleanup"}, 0, LIFE_ENDED, "no room to reap", 1},
    /* ENDED: report and teardown finish it */
    {P_ENDED, {"phase", "start"}, 77, LIFE_ENDED, "has ended (failed)", 1},
    {P_ENDED, {"phase", "after-wifi-reconnect"}, 77, LIFE_ENDED, "never continued", 1},
    {P_ENDED, {"phase", "cleanup"}, 0, LIFE_ENDED, "already passed", 1},
    {P_ENDED, {"phase", "report"}, 0, LIFE_ENDED, "PASSED phase.12.report", 1},
    {P_ENDED, {"phase", "teardown"}, 0, LIFE_FINISHED, "PASSED phase.13.teardown", 1},
    {P_ENDED, {"record-phase", "failed"}, 1, LIFE_ENDED, "never rewritten", 1},
    {P_ENDED, {"record-observation", "sleep_wake", "the VM survived"}, 0, LIFE_ENDED,
     "observation sleep_wake recorded", 1},
    /* FINISHED: read-only; only phase.01 writes (a new run) */
    {P_FINISHED, {"phase", "start"}, 0, LIFE_OPEN, "archived run", 0},
    {P_FINISHED, {"record-phase", "started"}, 0, LIFE_OPEN, "phase started", 0},
    /* STALE: never continued; phase.01 archives it; cleanup may reap it */
    {P_STALE, {"phase", "preflight"}, 77, LIFE_STALE, "idle for over 12 h", 1},
    {P_STALE, {"phase", "start"}, 0, LIFE_OPEN, "idle for over 12 h", 0},
    {P_STALE, {"phase", "cleanup"}, 0, LIFE_ENDED, "run completed", 1},
};

static void run_row(const transition *t)
{
    world w;
    world_open(&w);
    prepare(&w, t->from);
    char before[16], after[16];
    life_now(&w, before, sizeof before);
    tk_result r;
    int code = smoke(&w, &r, t->cmd[0], t->cmd[1], t->cmd[2]);
    char what[160];
    snprintf(what, sizeof what, "%s --[%s %s%s%s]-->", prep_names[t->from], t->cmd[0],
             t->cmd[1] ? t->cmd[1] : "", t->cmd[2] ? " " : "", t->cmd[2] ? t->cmd[2] : "");
    UNIT_CHECK(code == t->exit, "%s exit %d, expected %d: %s", what, code, t->exit, r.output);
    UNIT_CHECK(!t->says || strstr(r.output, t->says), "%s output lacks \"%s\": %s", what,
               t->says, r.output);
    UNIT_CHECK(strstr(r.output, "provisioning") == NULL, "%s provisioned: %s", what, r.output);
    life_state to = life_now(&w, after, sizeof after);
    UNIT_CHECK(to == t->to, "%s ended %s, expected %s", what, life_name(to), life_name(t->to));
    if (t->from != P_NONE)
        UNIT_CHECK(t->same_run == (strcmp(before, after) == 0), "%s run %s -> %s (%s)", what,
                   before, after, t->same_run ? "must stay" : "must be new");
    tk_result_free(&r);
    world_close(&w);
}

static void test_every_transition(void)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        run_row(&table[i]);
}

/* Every state, every event: each prepared state appears as `from` above,
 * and every lifecycle state is reached as `to`. */
static void test_table_covers_every_state(void)
{
    int from[P__COUNT] = {0}, to[LIFE__COUNT] = {0};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        from[table[i].from]++;
        to[table[i].to]++;
    }
    for (int p = 0; p < P__COUNT; p++)
        UNIT_CHECK(from[p] > 0, "no transition from %s", prep_names[p]);
    for (int s = 0; s < LIFE__COUNT; s++)
        UNIT_CHECK(to[s] > 0, "no transition into %s", life_name((life_state)s));
}

/* ---- a finished run is never rewritten ---------------------------------- */

static char *snapshot(world *w)
{
    const char *files[] = {"state.json", "evidence.md", "junit.xml", NULL};
    size_t cap = 1 << 20, n = 0;
    char *all = calloc(1, cap);
    for (int i = 0; files[i]; i++) {
        char *path = tk_path(w->dir, files[i]);
        char *text = tk_read(path, NULL);
        n += (size_t)snprintf(all + n, cap - n, "== %s\n%s\n", files[i], text ? text : "(none)");
        free(text);
        free(path);
    }
    return all;
}

static void test_finished_run_is_read_only(void)
{
    const char *cmds[][3] = {
        {"phase", "preflight", NULL}, {"phase", "launch", NULL}, {"phase", "cleanup", NULL},
        {"phase", "report", NULL}, {"phase", "teardown", NULL},
        {"record-phase", "failed", NULL}, {"record-phase", "completed", NULL},
        {"record-observation", "sleep_wake", "late words"}, {"confirm", "sleep-wake", NULL},
        {"status", NULL, NULL}, {"report", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        world w;
        world_open(&w);
        prepare(&w, P_FINISHED);
        tk_result r;
        smoke(&w, &r, "report", NULL, NULL);
        tk_result_free(&r);
        char *before = snapshot(&w);
        int code = smoke(&w, &r, cmds[i][0], cmds[i][1], cmds[i][2]);
        char *after = snapshot(&w);
        UNIT_CHECK(strcmp(before, after) == 0, "%s %s changed a finished run's files",
                   cmds[i][0], cmds[i][1] ? cmds[i][1] : "");
        UNIT_CHECK(code != 77 || strstr(r.output, "is finished"), "%s %s: %s", cmds[i][0],
                   cmds[i][1] ? cmds[i][1] : "", r.output);
        UNIT_CHECK(life_now(&w, NULL, 0) == LIFE_FINISHED, "%s %s: no longer finished",
                   cmds[i][0], cmds[i][1] ? cmds[i][1] : "");
        free(before);
        free(after);
        tk_result_free(&r);
        world_close(&w);
    }
}

/* A skip never replaces a failure in the saved results. */
static void test_skip_never_replaces_a_failure(void)
{
    world w;
    world_open(&w);
    prepare(&w, P_FAILING);
    tk_result r;
    smoke(&w, &r, "phase", "cleanup", NULL);
    tk_result_free(&r);
    UNIT_CHECK(smoke(&w, &r, "phase", "initial", NULL) == 77, "initial on an ended run: %s",
               r.output);
    tk_result_free(&r);
    state_t *st = load(&w);
    const state_phase_result *ini = st ? state_phase(st, "initial") : NULL;
    UNIT_CHECK(ini && ini->status == RESULT_FAILED, "initial's failure was replaced: %s",
               ini ? state_result_name(ini->status) : "gone");
    state_free(st);
    char *path = tk_path(w.dir, "junit.xml");
    char *xml = tk_read(path, NULL);
    UNIT_CHECK(xml && strstr(xml, "no reply within 120 s"), "junit.xml lost the failure");
    free(xml);
    free(path);
    world_close(&w);
}

/* ---- next: never names a command that refuses --------------------------- */

/* The command on the line after "next: ..." in `status`, as typed. */
static int next_command(const char *out, char *cmd, size_t cap)
{
    const char *next = strstr(out, "\nnext: ");
    const char *line = next ? strchr(next + 1, '\n') : NULL;
    if (!line || strncmp(line + 1, "  ", 2) != 0)
        return 0;
    line += 3;
    size_t n = strcspn(line, "\n");
    snprintf(cmd, cap, "%.*s", (int)n, line);
    return 1;
}

/* The phase a "ctest ... -R '^phase\.NN\.name$'" command runs. */
static const phase_def *phase_of_command(const char *cmd)
{
    const char *p = strstr(cmd, "-R '^phase\\.");
    if (!p)
        return NULL;
    char name[64];
    p += strlen("-R '^phase\\.");
    size_t n = 0;
    while (*p && *p != '$' && n + 1 < sizeof name) {
        if (*p != '\\')
            name[n++] = *p;
        p++;
    }
    name[n] = '\0';
    char full[80];
    snprintf(full, sizeof full, "phase.%s", name);
    return phase_find(full);
}

static void test_next_never_refuses(void)
{
    for (int p = 0; p < P__COUNT; p++) {
        world w;
        world_open(&w);
        prepare(&w, (prep)p);
        tk_result r;
        smoke(&w, &r, "status", NULL, NULL);
        char cmd[512];
        if (!UNIT_CHECK(next_command(r.output, cmd, sizeof cmd), "%s: status names no command: "
                        "%s", prep_names[p], r.output)) {
            tk_result_free(&r);
            world_close(&w);
            continue;
        }
        tk_result_free(&r);
        const phase_def *d = phase_of_command(cmd);
        if (UNIT_CHECK(d != NULL, "%s: next is not a phase: %s", prep_names[p], cmd)) {
            int code = smoke(&w, &r, "phase", d->name, NULL);
            UNIT_CHECK(code != 77, "%s: next (%s) refused: %s", prep_names[p], cmd, r.output);
            tk_result_free(&r);
        }
        world_close(&w);
    }
}

/* ---- interrupt: the run stays resumable --------------------------------- */

static void test_interrupt_keeps_the_run(void)
{
    world w;
    world_open(&w);
    prepare(&w, P_ACTIVE);
    smoke_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.lock_fd = -1;
    ctx.clock = clock_system();
    ctx.out = stdout;
    char err[ERR_BUFSZ];
    if (state_store_init(&ctx.store, w.dir, &ctx.clock, err) != ERR_OK ||
        ctx_load(&ctx, err) != ERR_OK)
        abort();
    int code = engine_record_interrupted(&ctx, phase_find("wifi-checkpoint"), "SIGINT",
                                         ctx_now(&ctx) - 10, 130);
    UNIT_CHECK(code == 130, "exit %d, expected 130", code);
    ctx_close(&ctx);
    state_t *st = load(&w);
    const state_phase_result *res = st ? state_phase(st, "wifi-checkpoint") : NULL;
    UNIT_CHECK(res && res->status == RESULT_SKIPPED && strstr(res->detail, "interrupted by "
               "SIGINT"), "interrupted phase recorded as %s: %s",
               res ? state_result_name(res->status) : "nothing", res ? res->detail : "");
    UNIT_CHECK(life_of(st, clock_wall_ms(NULL), NULL) == LIFE_ACTIVE, "no longer active");
    state_free(st);
    tk_result r;
    UNIT_CHECK(smoke(&w, &r, "phase", "wifi-checkpoint", NULL) != 77,
               "the interrupted phase cannot run again: %s", r.output);
    tk_result_free(&r);
    world_close(&w);
}

/* A create whose answer was lost leaves only the name or title recorded
 * before it: the run owns that resource all the same, so a failure then
 * ends the run through cleanup (which reaps by the name), never leaves it
 * open and resumable with a room on Band. */
static void test_recorded_names_count_as_owned(void)
{
    state_store store;
    char err[ERR_BUFSZ];
    char *dir = tk_tmpdir("life-own");
    if (state_store_init(&store, dir, NULL, err) != ERR_OK)
        abort();
    state_t *st = state_new(&store);
    UNIT_CHECK(!life_owns_something(st), "a new run owns nothing");
    snprintf(st->room_title, sizeof st->room_title, "Sandbox smoke - %s #1", st->run_id);
    UNIT_CHECK(life_owns_something(st), "a recorded room title is not counted");
    st->room_title[0] = '\0';
    snprintf(st->agent_name, sizeof st->agent_name, "e2e-band-%s-sandbox", st->run_id);
    UNIT_CHECK(life_owns_something(st), "a recorded agent name is not counted");
    state_set_phase(st, "launch", RESULT_FAILED, clock_wall_ms(NULL), 5, "Band timed out");
    UNIT_CHECK(life_of(st, clock_wall_ms(NULL), NULL) == LIFE_FAILING,
               "a failed launch that left an agent name is %s, want failing",
               life_name(life_of(st, clock_wall_ms(NULL), NULL)));
    snprintf(st->carried_from, sizeof st->carried_from, "0badc0de");
    UNIT_CHECK(!life_owns_something(st), "names carried from an archived run counted as ours");
    state_free(st);
    tk_rmtree(dir);
    free(dir);
}

const unit_case unit_cases[] = {
    {"recorded_names_count_as_owned", test_recorded_names_count_as_owned},
    {"every_transition", test_every_transition},
    {"table_covers_every_state", test_table_covers_every_state},
    {"finished_run_is_read_only", test_finished_run_is_read_only},
    {"skip_never_replaces_a_failure", test_skip_never_replaces_a_failure},
    {"next_never_refuses", test_next_never_refuses},
    {"interrupt_keeps_the_run", test_interrupt_keeps_the_run},
    {NULL, NULL},
};
