/* cli: band-smoke as operators and AI clients run it, one process per step,
 * against a temporary state folder: exit codes, SKIPPED lines, the next
 * command, reports at every step, corrupt state, and no secret anywhere. */
#include "platform.h"
#include "state.h"
#include "tk.h"
#include "tk_run.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CANARY "canary-user-key-5f1d0c9a7e3b"

typedef struct world {
    char *dir;
    char env_dir[1100];
    char *env[8];
} world;

static void world_open(world *w)
{
    w->dir = tk_tmpdir("cli");
    snprintf(w->env_dir, sizeof w->env_dir, "SMOKE_STATE_DIR=%s", w->dir);
    int n = 0;
    w->env[n++] = w->env_dir;
    w->env[n++] = "SMOKE_ENV_FILE=/nonexistent/band-smoke-test.env";
    w->env[n++] = "BAND_API_KEY_USER=" CANARY;
    w->env[n++] = "BAND_REST_URL=https://staging.band.example";
    w->env[n++] = "BAND_WS_URL=wss://staging.band.example/api/v1/socket/websocket";
    w->env[n] = NULL;
}

static void world_close(world *w)
{
    tk_rmtree(w->dir);
    free(w->dir);
}

/* Runs band-smoke with up to three arguments; checks no canary leaked. */
static int smoke(world *w, tk_result *r, const char *a, const char *b, const char *c)
{
    tk_smoke(w->env, r, a, b, c);
    UNIT_CHECK(strstr(r->output, CANARY) == NULL, "canary printed by band-smoke %s", a);
    return r->status;
}

static int file_has(const char *dir, const char *name, const char *needle)
{
    char *path = tk_path(dir, name);
    char *text = tk_read(path, NULL);
    int ok = text && (!needle || strstr(text, needle));
    free(text);
    free(path);
    return ok;
}

static int xmllint_ok(const char *dir)
{
    char *path = tk_path(dir, "junit.xml");
    char *argv[] = {"/usr/bin/xmllint", "--noout", "--schema",
                    SMOKE_TEST_DATA "/junit.xsd", path, NULL};
    tk_result r;
    tk_run(argv, NULL, 20000, &r);
    int ok = UNIT_CHECK(r.status == 0, "xmllint rejects %s: %s", path, r.output);
    tk_result_free(&r);
    free(path);
    return ok;
}

static void reports_valid(world *w, const char *verdict)
{
    UNIT_CHECK(file_has(w->dir, "evidence.md", verdict), "evidence.md lacks %s", verdict);
    xmllint_ok(w->dir);
    UNIT_CHECK(!file_has(w->dir, "evidence.md", CANARY), "canary in evidence.md");
    UNIT_CHECK(!file_has(w->dir, "junit.xml", CANARY), "canary in junit.xml");
    UNIT_CHECK(!file_has(w->dir, "state.json", CANARY), "canary in state.json");
}

/* Marks everything up to the initial probe as done, with a live agent (this
 * test process), the way phases 02-05 would have left the run. */
static void prepare_through_initial(world *w)
{
    state_store store;
    state_t *st = NULL;
    char err[ERR_BUFSZ];
    if (state_store_init(&store, w->dir, NULL, err) != ERR_OK ||
        state_load(&store, &st, err) != ERR_OK)
        abort();
    int64_t now = clock_wall_ms(NULL);
    const char *names[] = {"preflight", "sandbox", "launch", "initial"};
    for (int i = 0; i < 4; i++)
        state_set_phase(st, names[i], RESULT_PASSED, now, 5, "prepared by the test");
    st->agent_process.generation = 1;
    st->agent_process.pid = (int)getpid();
    st->agent_process.start_token = plat_proc_start_token(getpid());
    st->agent_process.launched_at_ms = now;
    st->agent_process.ready_at_ms = now;
    state_probe p = {.passed = 1, .at_ms = now, .latency_ms = 20, .generation = 1};
    snprintf(p.label, sizeof p.label, "initial");
    snprintf(p.marker, sizeof p.marker, "a1b2c3d4e5f6");
    snprintf(p.detail, sizeof p.detail, "sandbox-ack:a1b2c3d4e5f6");
    state_add_probe(st, &p);
    if (state_save(&store, st, err) != ERR_OK)
        abort();
    state_free(st);
}

static void test_status_without_a_run(void)
{
    world w;
    world_open(&w);
    tk_result r;
    UNIT_CHECK(smoke(&w, &r, "status", NULL, NULL) == 0, "status exit %d: %s", r.status,
               r.output);
    UNIT_CHECK(strstr(r.output, "no run yet") != NULL, "status output: %s", r.output);
    UNIT_CHECK(strstr(r.output, "-R '^phase\\.01\\.start$'") != NULL,
               "status does not name the start command: %s", r.output);
    tk_result_free(&r);
    world_close(&w);
}

static void test_start_to_wifi_gate(void)
{
    world w;
    world_open(&w);
    tk_result r;

    UNIT_CHECK(smoke(&w, &r, "phase", "start", NULL) == 0, "start: %d %s", r.status, r.output);
    UNIT_CHECK(strstr(r.output, "SCOPE:") && strstr(r.output, "PASSED phase.01.start"),
               "start output: %s", r.output);
    tk_result_free(&r);
    struct stat sb;
    char *state = tk_path(w.dir, "state.json");
    UNIT_CHECK(stat(state, &sb) == 0 && (sb.st_mode & 0777) == 0600, "state.json mode");
    UNIT_CHECK(stat(w.dir, &sb) == 0 && (sb.st_mode & 0777) == 0700, "state folder mode");
    reports_valid(&w, "INCOMPLETE");

    UNIT_CHECK(smoke(&w, &r, "phase", "phase.01.start", NULL) == 0, "start again");
    UNIT_CHECK(strstr(r.output, "already passed at") != NULL, "output: %s", r.output);
    tk_result_free(&r);

    UNIT_CHECK(smoke(&w, &r, "phase", "wifi-checkpoint", NULL) == 77, "gated checkpoint %d",
               r.status);
    UNIT_CHECK(strncmp(r.output, "SKIPPED: the 'initial' probe has not run", 40) == 0,
               "first line: %s", r.output);
    tk_result_free(&r);
    reports_valid(&w, "INCOMPLETE");

    prepare_through_initial(&w);
    UNIT_CHECK(smoke(&w, &r, "phase", "wifi-checkpoint", NULL) == 0, "checkpoint: %d %s",
               r.status, r.output);
    UNIT_CHECK(strstr(r.output, "OPERATOR STEP (Wi-Fi)") != NULL, "output: %s", r.output);
    UNIT_CHECK(strstr(r.output, "-R '^phase\\.07\\.after-wifi-reconnect$'") != NULL,
               "no resume command: %s", r.output);
    tk_result_free(&r);
    reports_valid(&w, "INCOMPLETE");

    UNIT_CHECK(smoke(&w, &r, "phase", "after-wifi-reconnect", NULL) == 77, "evidence gate %d",
               r.status);
    UNIT_CHECK(strncmp(r.output, "SKIPPED: agent.log shows no WebSocket disconnect", 47) == 0,
               "first line: %s", r.output);
    tk_result_free(&r);

    UNIT_CHECK(smoke(&w, &r, "phase", "sleep-checkpoint", NULL) == 77, "held %d", r.status);
    UNIT_CHECK(strstr(r.output, "waits at the Wi-Fi checkpoint") != NULL, "output: %s",
               r.output);
    tk_result_free(&r);
    UNIT_CHECK(smoke(&w, &r, "phase", "cleanup", NULL) == 77, "cleanup held %d", r.status);
    tk_result_free(&r);

    UNIT_CHECK(smoke(&w, &r, "status", NULL, NULL) == 0, "status %d", r.status);
    UNIT_CHECK(strstr(r.output, "waits at the Wi-Fi checkpoint") != NULL &&
               strstr(r.output, "initial") && strstr(r.output, "PROVEN"),
               "status output: %s", r.output);
    tk_result_free(&r);
    reports_valid(&w, "INCOMPLETE");
    free(state);
    world_close(&w);
}

static void test_commands_and_usage(void)
{
    world w;
    world_open(&w);
    tk_result r;
    UNIT_CHECK(smoke(&w, &r, "phase", "nosuch", NULL) == 2, "unknown phase %d", r.status);
    tk_result_free(&r);
    UNIT_CHECK(smoke(&w, &r, "frobnicate", NULL, NULL) == 2, "unknown command %d", r.status);
    tk_result_free(&r);
    UNIT_CHECK(smoke(&w, &r, "record-observation", "sleep_wake", "x") == 1,
               "observation without a run %d", r.status);
    tk_result_free(&r);
    smoke(&w, &r, "phase", "start", NULL);
    tk_result_free(&r);
    UNIT_CHECK(smoke(&w, &r, "record-observation", "nosuch", "text") == 2,
               "unknown check %d", r.status);
    tk_result_free(&r);
    UNIT_CHECK(smoke(&w, &r, "record-observation", "sleep_wake", "VM survived") == 0,
               "observation %d: %s", r.status, r.output);
    tk_result_free(&r);
    UNIT_CHECK(file_has(w.dir, "state.json", "VM survived"), "observation not in state");
    UNIT_CHECK(file_has(w.dir, "evidence.md", "VM survived"), "observation not in report");
    UNIT_CHECK(smoke(&w, &r, "confirm", "sleep-wake", NULL) == 1, "confirm too early %d",
               r.status);
    UNIT_CHECK(strstr(r.output, "not waiting at the sleep checkpoint") != NULL, "%s", r.output);
    tk_result_free(&r);
    UNIT_CHECK(smoke(&w, &r, "record-phase", "failed", NULL) == 0, "record failed %d",
               r.status);
    tk_result_free(&r);
    reports_valid(&w, "FAIL");
    UNIT_CHECK(smoke(&w, &r, "phase", "preflight", NULL) == 77, "failed run gated %d",
               r.status);
    UNIT_CHECK(strstr(r.output, "was marked failed and is never continued") != NULL, "%s",
               r.output);
    tk_result_free(&r);
    UNIT_CHECK(smoke(&w, &r, "report", NULL, NULL) == 0, "report %d", r.status);
    UNIT_CHECK(strstr(r.output, "FAIL") != NULL, "report output %s", r.output);
    tk_result_free(&r);
    world_close(&w);
}

static void test_corrupt_state_is_never_touched(void)
{
    world w;
    world_open(&w);
    char *state = tk_path(w.dir, "state.json");
    const char *bad = "{\"schema_version\": 1, \"run_id\": \"0123abcd\", \"pha";
    tk_write(state, bad);
    tk_result r;
    const char *cmds[][3] = {{"phase", "start", NULL}, {"phase", "preflight", NULL},
                             {"record-phase", "failed", NULL}, {"status", NULL, NULL},
                             {"confirm", "sleep-wake", NULL}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        int code = smoke(&w, &r, cmds[i][0], cmds[i][1], cmds[i][2]);
        UNIT_CHECK(code == 1, "%s %s: exit %d", cmds[i][0], cmds[i][1] ? cmds[i][1] : "",
                   code);
        UNIT_CHECK(strstr(r.output, state) != NULL, "%s: message does not name the file: %s",
                   cmds[i][0], r.output);
        tk_result_free(&r);
        char *now = tk_read(state, NULL);
        UNIT_CHECK(now && strcmp(now, bad) == 0, "%s changed state.json", cmds[i][0]);
        free(now);
    }
    free(state);
    world_close(&w);
}

/* `band-smoke --version`: one line, the suite version, no run needed. */
static void test_version(void)
{
    world w;
    world_open(&w);
    tk_result r;
    UNIT_CHECK(smoke(&w, &r, "--version", NULL, NULL) == 0, "--version exit %d", r.status);
    UNIT_CHECK(strcmp(r.output, "band-smoke " SMOKE_VERSION "\n") == 0, "--version printed: %s",
               r.output);
    tk_result_free(&r);
    world_close(&w);
}

/* `cmake --install` to a fresh prefix gives a band-smoke that works from
 * there: it knows its version, and its preflight runs and names the
 * installed project root as where .env.test goes. */
static void test_installed_copy(void)
{
    char *prefix = tk_tmpdir("install");
    char *argv[] = {"/usr/bin/cmake", "--install", SMOKE_BINARY_DIR, "--prefix", prefix, NULL};
    tk_result r;
    tk_run(argv, NULL, 120000, &r);
    UNIT_CHECK(r.status == 0 && strstr(r.output, "project root"), "cmake --install: %d %s",
               r.status, r.output);
    tk_result_free(&r);
    char *bin = tk_path(prefix, "bin/band-smoke");
    char *share = tk_path(prefix, "share/band-sandbox-staging-smoke");
    char *payload = tk_path(share, "fixtures/sandbox-agent/agent.py");
    UNIT_CHECK(access(bin, X_OK) == 0 && access(payload, R_OK) == 0,
               "nothing usable installed at %s", prefix);
    char *state = tk_path(prefix, "state");
    char env_state[1200];
    snprintf(env_state, sizeof env_state, "SMOKE_STATE_DIR=%s", state);
    char *env[] = {env_state, "SMOKE_ENV_FILE=", "BAND_API_KEY_USER=", "BAND_REST_URL=",
                   "BAND_WS_URL=", NULL};
    char *version[] = {bin, "--version", NULL};
    tk_run(version, env, 20000, &r);
    UNIT_CHECK(r.status == 0 && strcmp(r.output, "band-smoke " SMOKE_VERSION "\n") == 0,
               "installed --version: %d %s", r.status, r.output);
    tk_result_free(&r);
    char *preflight[] = {bin, "preflight", NULL};
    tk_run(preflight, env, 60000, &r);
    char want[1200];
    snprintf(want, sizeof want, ".env.test at the project root (%s/.env.test", share);
    UNIT_CHECK(r.status == 1 && strstr(r.output, "[FAIL] BAND_REST_URL is unset") &&
                   strstr(r.output, want), "installed preflight: %d %s", r.status, r.output);
    tk_result_free(&r);
    free(state);
    free(payload);
    free(share);
    free(bin);
    tk_rmtree(prefix);
    free(prefix);
}

const unit_case unit_cases[] = {
    {"version", test_version},
    {"installed_copy", test_installed_copy},
    {"status_without_a_run", test_status_without_a_run},
    {"start_to_wifi_gate", test_start_to_wifi_gate},
    {"commands_and_usage", test_commands_and_usage},
    {"corrupt_state_is_never_touched", test_corrupt_state_is_never_touched},
    {NULL, NULL},
};
