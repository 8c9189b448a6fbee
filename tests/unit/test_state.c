/* state: the run state file keeps every field, every rule of design
 * section 4, and never replaces a file it cannot read. */
#include "redact.h"
#include "state.h"
#include "tk.h"
#include "unit.h"

#include <cJSON.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define T0 1796211980123LL /* 2026-12-02T11:46:20.123Z */
#define HOUR_MS (3600LL * 1000)

/* ---- fixture: a temp folder, a store in a nested folder, a fake clock -- */

typedef struct fixture {
    char *tmp;
    char *dir; /* tmp/run/.sandbox-smoke: two levels the store must make */
    clock_reading now;
    state_store store;
    char err[ERR_BUFSZ];
} fixture;

static void fake_read(void *ud, clock_reading *out)
{
    *out = *(const clock_reading *)ud;
}

static int fx_open(fixture *fx)
{
    memset(fx, 0, sizeof *fx);
    fx->tmp = tk_tmpdir("state");
    fx->dir = tk_path(fx->tmp, "run/.sandbox-smoke");
    fx->now.wall_ms = T0;
    clock_src clk = {fake_read, &fx->now};
    err_code rc = state_store_init(&fx->store, fx->dir, &clk, fx->err);
    return UNIT_CHECK(rc == ERR_OK, "store_init: %s", fx->err);
}

static void fx_close(fixture *fx)
{
    tk_rmtree(fx->tmp);
    free(fx->tmp);
    free(fx->dir);
}

static char *fx_file(const fixture *fx, const char *name)
{
    return tk_path(fx->dir, name);
}

/* The folder's entry names joined by spaces, in readdir order; names that
 * start with a dot only `with_hidden`. */
static void list_dir(const char *dir, int with_hidden, char *out, size_t cap)
{
    out[0] = '\0';
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (!with_hidden && e->d_name[0] == '.')
            continue;
        size_t used = strlen(out);
        snprintf(out + used, cap - used, "%s%s", used ? " " : "", e->d_name);
    }
    closedir(d);
}

static int file_mode(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (int)(sb.st_mode & 07777) : -1;
}

static state_probe probe(const char *label, int passed)
{
    state_probe p;
    memset(&p, 0, sizeof p);
    snprintf(p.label, sizeof p.label, "%s", label);
    p.passed = passed;
    p.latency_ms = -1;
    return p;
}

/* ---- a state with every field set, and the check that all came back --- */

static void fill_full(state_t *st)
{
    snprintf(st->run_id, sizeof st->run_id, "0a1b2c3d");
    st->phase = RUN_AWAITING_SLEEP;
    snprintf(st->sandbox_name, sizeof st->sandbox_name, "smoke-sbx");
    snprintf(st->workspace, sizeof st->workspace, "/home/op/work space/ünïcode");
    snprintf(st->sbx_version, sizeof st->sbx_version, "v0.9.1");
    snprintf(st->sdk_version, sizeof st->sdk_version, "6.0.0");
    snprintf(st->room_id, sizeof st->room_id, "room-42");
    snprintf(st->agent_id, sizeof st->agent_id, "agent-7");
    snprintf(st->agent_name, sizeof st->agent_name, "smoke \"quoted\" agent");
    snprintf(st->carried_from, sizeof st->carried_from, "deadbeef");
    state_probe p = probe("initial", 0);
    snprintf(p.marker, sizeof p.marker, "0123456789ab");
    snprintf(p.detail, sizeof p.detail, "timed out\nafter 120 s");
    p.at_ms = T0 + 1;
    p.latency_ms = 1500;
    p.generation = 1;
    state_add_probe(st, &p);
    p = probe("initial", 1);
    p.at_ms = T0 + 2;
    p.latency_ms = 850;
    p.generation = 2;
    state_add_probe(st, &p);
    state_set_phase(st, "initial", RESULT_PASSED, T0 + 3, 4200, "ok");
    state_set_phase(st, "preflight", RESULT_SKIPPED, T0 + 4, 0, "SBX_SANDBOX unset");
    state_set_residual(st, "sleep_wake", "lid closed 2 min");
    state_set_residual(st, "daemon_restart", "agent restarted once");
    state_wifi_evidence *w = &st->evidence.wifi;
    w->disconnect_at_ms = T0 + 10;
    w->reconnect_at_ms = T0 + 11;
    w->generation = 2;
    snprintf(w->disconnect_line, sizeof w->disconnect_line, "WebSocket disconnected");
    snprintf(w->reconnect_line, sizeof w->reconnect_line, "WebSocket reconnected");
    state_sleep_evidence *s = &st->evidence.sleep;
    s->checkpoint.wall_ms = T0 + 20;
    s->checkpoint.awake_ms = 123456;
    s->checkpoint.total_ms = 234567;
    s->slept_ms = 40000;
    s->confirmed_at_ms = T0 + 21;
    snprintf(s->method, sizeof s->method, "measured");
    snprintf(s->sandbox_status, sizeof s->sandbox_status, "running");
    state_daemon_evidence *d = &st->evidence.daemon_restart;
    d->stop_at_ms = T0 + 30;
    d->start_at_ms = T0 + 31;
    snprintf(d->sandbox_status, sizeof d->sandbox_status, "stopped");
    snprintf(d->agent_exit, sizeof d->agent_exit, "exited with status 137");
    d->ready_at_ms = T0 + 32;
    d->recovery_ms = 9000;
    state_agent_process *a = &st->agent_process;
    a->generation = 2;
    a->pid = 4242;
    a->start_token = 9007199254740000ULL; /* near 2^53: still exact */
    a->launched_at_ms = T0 + 40;
    a->ready_at_ms = T0 + 41;
    a->log_offset = 65536;
    a->ended_at_ms = T0 + 42;
    snprintf(a->exit_detail, sizeof a->exit_detail, "killed by signal 9");
    st->started_at_ms = T0 - HOUR_MS;
}

/* Functions, not bare macros, so each argument is evaluated once. */
static int same_str(const char *got, const char *want, const char *expr, int line)
{
    return unit_check(strcmp(got, want) == 0, line, __FILE__, "%s: \"%s\", want \"%s\"", expr,
                      got, want);
}

static int same_int(long long got, long long want, const char *expr, int line)
{
    return unit_check(got == want, line, __FILE__, "%s: %lld, want %lld", expr, got, want);
}

#define SAME_STR(got, want) same_str((got), (want), #got, __LINE__)
#define SAME_INT(got, want) same_int((long long)(got), (long long)(want), #got, __LINE__)

static void check_full(const state_t *st, int64_t updated_at)
{
    SAME_INT(st->schema_version, STATE_SCHEMA_VERSION);
    SAME_STR(st->run_id, "0a1b2c3d");
    SAME_INT(st->phase, RUN_AWAITING_SLEEP);
    SAME_STR(st->sandbox_name, "smoke-sbx");
    SAME_STR(st->workspace, "/home/op/work space/ünïcode");
    SAME_STR(st->sbx_version, "v0.9.1");
    SAME_STR(st->sdk_version, "6.0.0");
    SAME_STR(st->room_id, "room-42");
    SAME_STR(st->agent_id, "agent-7");
    SAME_STR(st->agent_name, "smoke \"quoted\" agent");
    SAME_STR(st->carried_from, "deadbeef");
    if (!SAME_INT(st->nprobes, 2))
        return;
    SAME_STR(st->probes[0].label, "initial");
    SAME_STR(st->probes[0].marker, "0123456789ab");
    SAME_INT(st->probes[0].passed, 0);
    SAME_STR(st->probes[0].detail, "timed out\nafter 120 s");
    SAME_INT(st->probes[0].at_ms, T0 + 1);
    SAME_INT(st->probes[0].latency_ms, 1500);
    SAME_INT(st->probes[0].generation, 1);
    SAME_INT(st->probes[1].passed, 1);
    SAME_STR(st->probes[1].marker, "");
    SAME_INT(st->probes[1].latency_ms, 850);
    SAME_INT(st->probes[1].generation, 2);
    if (!SAME_INT(st->nphases, 2))
        return;
    SAME_STR(st->phases[0].name, "initial");
    SAME_INT(st->phases[0].status, RESULT_PASSED);
    SAME_INT(st->phases[0].at_ms, T0 + 3);
    SAME_INT(st->phases[0].duration_ms, 4200);
    SAME_STR(st->phases[0].detail, "ok");
    SAME_STR(st->phases[1].name, "preflight");
    SAME_INT(st->phases[1].status, RESULT_SKIPPED);
    SAME_STR(st->phases[1].detail, "SBX_SANDBOX unset");
    SAME_STR(st->residual_sleep_wake, "lid closed 2 min");
    SAME_STR(st->residual_daemon_restart, "agent restarted once");
    const state_evidence *e = &st->evidence;
    SAME_INT(e->wifi.disconnect_at_ms, T0 + 10);
    SAME_INT(e->wifi.reconnect_at_ms, T0 + 11);
    SAME_INT(e->wifi.generation, 2);
    SAME_STR(e->wifi.disconnect_line, "WebSocket disconnected");
    SAME_STR(e->wifi.reconnect_line, "WebSocket reconnected");
    SAME_INT(e->sleep.checkpoint.wall_ms, T0 + 20);
    SAME_INT(e->sleep.checkpoint.awake_ms, 123456);
    SAME_INT(e->sleep.checkpoint.total_ms, 234567);
    SAME_INT(e->sleep.slept_ms, 40000);
    SAME_INT(e->sleep.confirmed_at_ms, T0 + 21);
    SAME_STR(e->sleep.method, "measured");
    SAME_STR(e->sleep.sandbox_status, "running");
    SAME_INT(e->daemon_restart.stop_at_ms, T0 + 30);
    SAME_INT(e->daemon_restart.start_at_ms, T0 + 31);
    SAME_STR(e->daemon_restart.sandbox_status, "stopped");
    SAME_STR(e->daemon_restart.agent_exit, "exited with status 137");
    SAME_INT(e->daemon_restart.ready_at_ms, T0 + 32);
    SAME_INT(e->daemon_restart.recovery_ms, 9000);
    const state_agent_process *a = &st->agent_process;
    SAME_INT(a->generation, 2);
    SAME_INT(a->pid, 4242);
    UNIT_CHECK(a->start_token == 9007199254740000ULL, "start_token %llu",
               (unsigned long long)a->start_token);
    SAME_INT(a->launched_at_ms, T0 + 40);
    SAME_INT(a->ready_at_ms, T0 + 41);
    SAME_INT(a->log_offset, 65536);
    SAME_INT(a->ended_at_ms, T0 + 42);
    SAME_STR(a->exit_detail, "killed by signal 9");
    SAME_INT(st->started_at_ms, T0 - HOUR_MS);
    SAME_INT(st->updated_at_ms, updated_at);
}

/* Follows "a.b.c" through objects (and "probes.1" into arrays). */
static const cJSON *json_at(const cJSON *node, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    char *save = NULL;
    for (char *key = strtok_r(buf, ".", &save); key && node; key = strtok_r(NULL, ".", &save))
        node = cJSON_IsArray(node) ? cJSON_GetArrayItem(node, atoi(key))
                                   : cJSON_GetObjectItemCaseSensitive(node, key);
    return node;
}

/* The file on disk uses the contract's names and types (design section 4). */
static void check_json_names(const char *text)
{
    cJSON *root = cJSON_Parse(text);
    if (!UNIT_CHECK(root != NULL, "saved state is not JSON:\n%s", text))
        return;
    static const struct {
        const char *path;
        const char *string; /* NULL: a number */
        double number;
    } want[] = {
        {"schema_version", NULL, 1},
        {"run_id", "0a1b2c3d", 0},
        {"phase", "awaiting-sleep-wake", 0},
        {"sandbox_name", "smoke-sbx", 0},
        {"sbx_version", "v0.9.1", 0},
        {"sdk_version", "6.0.0", 0},
        {"room_id", "room-42", 0},
        {"agent_id", "agent-7", 0},
        {"carried_from", "deadbeef", 0},
        {"probes.0.label", "initial", 0},
        {"probes.0.marker", "0123456789ab", 0},
        {"probes.0.at", "2026-12-02T11:46:20.124Z", 0},
        {"probes.0.latency_ms", NULL, 1500},
        {"probes.1.generation", NULL, 2},
        {"phases.initial.status", "passed", 0},
        {"phases.initial.at", "2026-12-02T11:46:20.126Z", 0},
        {"phases.initial.duration_ms", NULL, 4200},
        {"phases.preflight.status", "skipped", 0},
        {"residual_checks.sleep_wake", "lid closed 2 min", 0},
        {"residual_checks.daemon_restart", "agent restarted once", 0},
        {"evidence.wifi.disconnect_at", "2026-12-02T11:46:20.133Z", 0},
        {"evidence.wifi.reconnect_line", "WebSocket reconnected", 0},
        {"evidence.sleep.checkpoint.wall", "2026-12-02T11:46:20.143Z", 0},
        {"evidence.sleep.checkpoint.awake_ms", NULL, 123456},
        {"evidence.sleep.checkpoint.total_ms", NULL, 234567},
        {"evidence.sleep.slept_ms", NULL, 40000},
        {"evidence.sleep.confirmed_at", "2026-12-02T11:46:20.144Z", 0},
        {"evidence.sleep.method", "measured", 0},
        {"evidence.daemon_restart.stop_at", "2026-12-02T11:46:20.153Z", 0},
        {"evidence.daemon_restart.agent_exit", "exited with status 137", 0},
        {"evidence.daemon_restart.recovery_ms", NULL, 9000},
        {"agent_process.pid", NULL, 4242},
        {"agent_process.log_offset", NULL, 65536},
        {"agent_process.exit_detail", "killed by signal 9", 0},
        {"started_at", "2026-12-02T10:46:20.123Z", 0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const cJSON *v = json_at(root, want[i].path);
        if (want[i].string)
            UNIT_CHECK(cJSON_IsString(v) && strcmp(v->valuestring, want[i].string) == 0,
                       "%s is not \"%s\"", want[i].path, want[i].string);
        else
            UNIT_CHECK(cJSON_IsNumber(v) && v->valuedouble == want[i].number,
                       "%s is not %g", want[i].path, want[i].number);
    }
    UNIT_CHECK(cJSON_IsFalse(json_at(root, "probes.0.passed")), "probes[0].passed not false");
    UNIT_CHECK(cJSON_IsTrue(json_at(root, "probes.1.passed")), "probes[1].passed not true");
    cJSON_Delete(root);
}

/* ---- saving and loading ------------------------------------------------ */

static void test_round_trip_keeps_every_field(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    state_t *st = state_new(&fx.store);
    fill_full(st);
    fx.now.wall_ms = T0 + 5 * HOUR_MS;
    err_code rc = state_save(&fx.store, st, fx.err);
    UNIT_CHECK(rc == ERR_OK, "save: %s", fx.err);
    SAME_INT(st->updated_at_ms, T0 + 5 * HOUR_MS);

    state_t *back = NULL;
    rc = state_load(&fx.store, &back, fx.err);
    if (UNIT_CHECK(rc == ERR_OK, "load: %s", fx.err))
        check_full(back, T0 + 5 * HOUR_MS);
    char *text = tk_read(fx.store.path, NULL);
    check_json_names(text);
    free(text);
    state_free(back);
    state_free(st);
    fx_close(&fx);
}

static void test_parse_of_to_json_is_identity(void)
{
    state_t *st = state_new(NULL);
    fill_full(st);
    st->updated_at_ms = T0 + 7;
    char *text = state_to_json(st);
    state_t *back = calloc(1, sizeof *back);
    char err[ERR_BUFSZ];
    err_code rc = state_parse(text, strlen(text), "mem", back, err);
    if (UNIT_CHECK(rc == ERR_OK, "parse: %s", err)) {
        check_full(back, T0 + 7);
        char *again = state_to_json(back);
        UNIT_CHECK(strcmp(text, again) == 0, "second rendering differs");
        free(again);
    }
    free(text);
    free(back);
    state_free(st);
}

static void test_defaults_and_unknown_fields(void)
{
    const char *json = "{\"schema_version\":1,\"run_id\":\"0123abcd\",\"phase\":\"completed\","
                       "\"from_the_future\":{\"x\":[1,2]},\"probes\":[{\"label\":\"initial\","
                       "\"passed\":true,\"extra\":null}],\"started_at\":null,\"room_id\":\"\"}";
    state_t *st = calloc(1, sizeof *st);
    char err[ERR_BUFSZ];
    err_code rc = state_parse(json, strlen(json), "mem", st, err);
    if (UNIT_CHECK(rc == ERR_OK, "minimal state refused: %s", err)) {
        SAME_INT(st->phase, RUN_COMPLETED);
        SAME_INT(st->nprobes, 1);
        SAME_INT(st->probes[0].latency_ms, -1);
        SAME_INT(st->evidence.sleep.slept_ms, -1);
        SAME_INT(st->started_at_ms, 0);
        SAME_STR(st->room_id, "");
    }
    free(st);
}

static void test_new_run(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    state_t *a = state_new(&fx.store);
    state_t *b = state_new(&fx.store);
    int hex = 1;
    for (int i = 0; i < 8; i++)
        hex &= (a->run_id[i] >= '0' && a->run_id[i] <= '9') ||
               (a->run_id[i] >= 'a' && a->run_id[i] <= 'f');
    UNIT_CHECK(hex && strlen(a->run_id) == 8, "run_id \"%s\"", a->run_id);
    UNIT_CHECK(strcmp(a->run_id, b->run_id) != 0, "two runs share id %s", a->run_id);
    SAME_INT(a->phase, RUN_STARTED);
    SAME_INT(a->schema_version, STATE_SCHEMA_VERSION);
    SAME_INT(a->started_at_ms, T0);
    SAME_INT(a->evidence.sleep.slept_ms, -1);
    SAME_INT(a->nprobes, 0);
    state_free(a);
    state_free(b);
    fx_close(&fx);
}

static void test_file_modes_and_no_temp_files(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    SAME_INT(file_mode(fx.dir), 0700);
    state_t *st = state_new(&fx.store);
    for (int i = 0; i < 3; i++)
        UNIT_CHECK(state_save(&fx.store, st, fx.err) == ERR_OK, "save: %s", fx.err);
    SAME_INT(file_mode(fx.store.path), 0600);
    char names[256];
    list_dir(fx.dir, 1, names, sizeof names);
    SAME_STR(names, "state.json");
    state_free(st);

    /* An existing, too-open folder is made private. */
    char *open_dir = tk_path(fx.tmp, "open");
    mkdir(open_dir, 0755);
    chmod(open_dir, 0755);
    state_store other;
    UNIT_CHECK(state_store_init(&other, open_dir, NULL, fx.err) == ERR_OK, "%s", fx.err);
    SAME_INT(file_mode(open_dir), 0700);
    free(open_dir);
    fx_close(&fx);
}

static void test_store_init_refusals(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    state_store s;
    char *file = tk_path(fx.tmp, "plain-file");
    tk_write(file, "x");
    UNIT_CHECK(state_store_init(&s, file, NULL, fx.err) == ERR_IO, "a file as the folder");
    char *below = tk_path(file, "sub");
    UNIT_CHECK(state_store_init(&s, below, NULL, fx.err) == ERR_IO, "a folder under a file");
    char longpath[STATE_PATH_SZ + 8];
    memset(longpath, 'a', sizeof longpath - 1);
    longpath[sizeof longpath - 1] = '\0';
    UNIT_CHECK(state_store_init(&s, longpath, NULL, fx.err) == ERR_USAGE, "over-long path");
    UNIT_CHECK(state_store_init(&s, "", NULL, fx.err) == ERR_USAGE, "empty path");

    char *slash = malloc(strlen(fx.dir) + 3);
    sprintf(slash, "%s//", fx.dir);
    UNIT_CHECK(state_store_init(&s, slash, NULL, fx.err) == ERR_OK, "%s", fx.err);
    SAME_STR(s.dir, fx.dir);
    SAME_STR(s.path, fx.store.path);
    free(slash);
    free(below);
    free(file);
    fx_close(&fx);
}

/* ---- damaged files ----------------------------------------------------- */

typedef struct corrupt_case {
    const char *name;
    const char *text;
    const char *problem; /* must appear in the message */
    size_t len;          /* of text, which may hold a NUL */
} corrupt_case;
#define CASE(name, text, problem) {name, text, problem, sizeof(text) - 1}

#define HEAD "{\"schema_version\":1,\"run_id\":\"0123abcd\",\"phase\":\"started\""
#define WITH_NUL HEAD ",\"room_id\":\"a\0b\"}"
static const corrupt_case corrupt_cases[] = {
    CASE("empty", "", "file is empty"),
    CASE("blank", " \n\t\n", "file is empty"),
    CASE("not JSON", "hello, world", "not JSON (parse error near byte 0)"),
    CASE("garbage after", HEAD "} trailing", "not JSON (parse error near byte"),
    CASE("NUL inside", WITH_NUL, "NUL byte at byte"),
    CASE("truncated", HEAD ",\"probes\":[{\"label\":\"in", "truncated"),
    CASE("array root", "[1,2,3]", "top level is an array, not an object"),
    CASE("string root", "\"state\"", "top level is a string, not an object"),
    CASE("missing schema_version", "{\"run_id\":\"0123abcd\",\"phase\":\"started\"}",
         "missing schema_version"),
    CASE("unknown schema_version", "{\"schema_version\":7,\"run_id\":\"0123abcd\"}",
         "unknown schema_version 7 (this band-smoke reads 1)"),
    CASE("schema_version as text", "{\"schema_version\":\"1\"}",
         "field schema_version is not a number"),
    CASE("missing run_id", "{\"schema_version\":1,\"phase\":\"started\"}",
         "field run_id is missing"),
    CASE("upper-case run_id",
         "{\"schema_version\":1,\"run_id\":\"0123ABCD\",\"phase\":\"started\"}",
         "field run_id is not 8 lowercase hex digits"),
    CASE("short run_id", "{\"schema_version\":1,\"run_id\":\"abc\",\"phase\":\"started\"}",
         "field run_id is not 8 lowercase hex digits"),
    CASE("bad carried_from", HEAD ",\"carried_from\":\"zzzzzzzz\"}",
         "field carried_from is not 8 lowercase hex digits"),
    CASE("unknown phase", "{\"schema_version\":1,\"run_id\":\"0123abcd\",\"phase\":\"finished\"}",
         "field phase has an unknown run phase \"finished\""),
    CASE("phase as number", "{\"schema_version\":1,\"run_id\":\"0123abcd\",\"phase\":3}",
         "field phase is not a string"),
    CASE("passed as text",
         HEAD ",\"probes\":[{\"label\":\"a\",\"passed\":true},{\"label\":\"b\",\"passed\":false},"
              "{\"label\":\"c\",\"passed\":\"yes\"}]}",
         "field probes[2].passed is not a boolean"),
    CASE("probe without label", HEAD ",\"probes\":[{\"passed\":true}]}",
         "field probes[0].label is missing"),
    CASE("probes as object", HEAD ",\"probes\":{}}", "field probes is not an array"),
    CASE("probe as number", HEAD ",\"probes\":[7]}", "field probes[0] is not an object"),
    CASE("fractional latency",
         HEAD ",\"probes\":[{\"label\":\"a\",\"passed\":true,\"latency_ms\":1.5}]}",
         "field probes[0].latency_ms is not a whole number"),
    CASE("unknown status", HEAD ",\"phases\":{\"initial\":{\"status\":\"great\"}}}",
         "field phases.initial.status has an unknown status \"great\""),
    CASE("phases as array", HEAD ",\"phases\":[]}", "field phases is not an object"),
    CASE("time as number", HEAD ",\"started_at\":1796211980123}", "field started_at is not a time"),
    CASE("time as prose", HEAD ",\"updated_at\":\"yesterday\"}",
         "field updated_at is not an ISO-8601 UTC time"),
    CASE("over-long string",
         HEAD ",\"sbx_version\":\"0123456789012345678901234567890123456789012345678901234567890123"
              "456789\"}",
         "field sbx_version is too long (70 bytes; at most 63)"),
    CASE("checkpoint as list", HEAD ",\"evidence\":{\"sleep\":{\"checkpoint\":[]}}}",
         "field evidence.sleep.checkpoint is not an object"),
    CASE("pid out of range", HEAD ",\"agent_process\":{\"pid\":1e12}}",
         "field agent_process.pid is out of range"),
    CASE("negative token", HEAD ",\"agent_process\":{\"start_token\":-1}}",
         "field agent_process.start_token is out of range"),
    CASE("residual as bool", HEAD ",\"residual_checks\":{\"sleep_wake\":true}}",
         "field residual_checks.sleep_wake is not a string"),
};

/* Writes `len` bytes exactly (the NUL case needs more than tk_write). */
static void write_bytes(const char *path, const char *text, size_t len)
{
    FILE *fp = fopen(path, "wb");
    if (fp) {
        fwrite(text, 1, len, fp);
        fclose(fp);
    }
}

static int same_bytes(const char *path, const char *want, size_t len)
{
    size_t got_len = 0;
    char *got = tk_read(path, &got_len);
    int same = got && got_len == len && memcmp(got, want, len) == 0;
    free(got);
    return same;
}

static void check_corrupt_case(fixture *fx, const corrupt_case *c)
{
    size_t len = c->len;
    write_bytes(fx->store.path, c->text, len);
    state_t *st = NULL;
    err_code rc = state_load(&fx->store, &st, fx->err);
    UNIT_CHECK(rc == ERR_CORRUPT, "%s: load gave %s", c->name, err_str(rc));
    UNIT_CHECK(strstr(fx->err, fx->store.path) != NULL, "%s: message does not name the file: %s",
               c->name, fx->err);
    UNIT_CHECK(strstr(fx->err, c->problem) != NULL, "%s: message \"%s\" lacks \"%s\"", c->name,
               fx->err, c->problem);
    state_free(st);

    state_t *fresh = state_new(&fx->store);
    rc = state_save(&fx->store, fresh, fx->err);
    UNIT_CHECK(rc == ERR_CORRUPT && strstr(fx->err, c->problem), "%s: save gave %s: %s", c->name,
               err_str(rc), fx->err);
    rc = state_rotate(&fx->store, &fresh, fx->err);
    UNIT_CHECK(rc == ERR_CORRUPT, "%s: rotate gave %s", c->name, err_str(rc));
    int rotated = -1;
    state_t *opened = NULL;
    rc = state_open_run(&fx->store, &opened, &rotated, fx->err);
    UNIT_CHECK(rc == ERR_CORRUPT && opened == NULL && rotated == 0, "%s: open_run gave %s",
               c->name, err_str(rc));
    UNIT_CHECK(same_bytes(fx->store.path, c->text, len), "%s: the file was changed", c->name);
    char names[256];
    list_dir(fx->dir, 1, names, sizeof names);
    UNIT_CHECK(strcmp(names, "state.json") == 0, "%s: folder holds \"%s\"", c->name, names);
    state_free(fresh);
}

static void test_corrupt_files_are_named_and_never_replaced(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    for (size_t i = 0; i < sizeof corrupt_cases / sizeof corrupt_cases[0]; i++)
        check_corrupt_case(&fx, &corrupt_cases[i]);
    fx_close(&fx);
}

/* A file may not hold more than the tables do. */
static void test_overfull_tables_are_corrupt(void)
{
    char json[8192] = HEAD ",\"probes\":[";
    for (int i = 0; i <= STATE_MAX_PROBES; i++) {
        strcat(json, i ? "," : "");
        strcat(json, "{\"label\":\"a\",\"passed\":true}");
    }
    strcat(json, "]}");
    state_t *st = calloc(1, sizeof *st);
    char err[ERR_BUFSZ];
    err_code rc = state_parse(json, strlen(json), "f.json", st, err);
    UNIT_CHECK(rc == ERR_CORRUPT && strstr(err, "f.json: field probes has 65 entries (at most 64)"),
               "65 probes: %s", err);

    snprintf(json, sizeof json, HEAD ",\"phases\":{");
    for (int i = 0; i <= STATE_MAX_PHASES; i++) {
        size_t used = strlen(json);
        snprintf(json + used, sizeof json - used, "%s\"p%d\":{\"status\":\"passed\"}",
                 i ? "," : "", i);
    }
    strcat(json, "}}");
    rc = state_parse(json, strlen(json), "f.json", st, err);
    UNIT_CHECK(rc == ERR_CORRUPT && strstr(err, "field phases has more than 16 entries"),
               "17 phases: %s", err);

    const char *long_key = HEAD ",\"phases\":{\"a-phase-name-far-longer-than-the-key\":"
                           "{\"status\":\"passed\"}}}";
    rc = state_parse(long_key, strlen(long_key), "f.json", st, err);
    UNIT_CHECK(rc == ERR_CORRUPT && strstr(err, "field phases has a key that is empty or over 31"),
               "long phase name: %s", err);
    free(st);
}

/* Half of a real saved file is what a crash mid-write would leave. */
static void test_truncated_real_file(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    state_t *st = state_new(&fx.store);
    fill_full(st);
    state_save(&fx.store, st, fx.err);
    size_t len = 0;
    char *text = tk_read(fx.store.path, &len);
    write_bytes(fx.store.path, text, len / 2);
    state_t *back = NULL;
    err_code rc = state_load(&fx.store, &back, fx.err);
    UNIT_CHECK(rc == ERR_CORRUPT && strstr(fx.err, "truncated"), "half a file: %s: %s",
               err_str(rc), fx.err);
    UNIT_CHECK(state_save(&fx.store, st, fx.err) == ERR_CORRUPT, "save over half a file");
    UNIT_CHECK(same_bytes(fx.store.path, text, len / 2), "half a file was changed");
    free(text);
    state_free(st);
    fx_close(&fx);
}

/* Every prefix and many byte flips of a real state: only OK or CORRUPT,
 * never a crash (AddressSanitizer watches the reads). */
static void test_parse_survives_damage(void)
{
    state_t *st = state_new(NULL);
    fill_full(st);
    char *text = state_to_json(st);
    size_t len = strlen(text);
    state_t *out = malloc(sizeof *out);
    char err[ERR_BUFSZ];
    int bad = 0;
    for (size_t cut = 0; cut <= len; cut++) {
        char *prefix = malloc(cut ? cut : 1);
        memcpy(prefix, text, cut);
        err_code rc = state_parse(prefix, cut, "mem", out, err);
        bad += rc != (cut == len ? ERR_OK : ERR_CORRUPT);
        free(prefix);
    }
    unsigned seed = 12345;
    static const char noise[] = "{}[]\",:0123456789.-eE\\ntfu\x01\x80\xff ";
    for (int round = 0; round < 4000; round++) {
        char *copy = malloc(len);
        memcpy(copy, text, len);
        for (int flips = 1 + round % 4; flips > 0; flips--) {
            seed = seed * 1103515245u + 12345u;
            copy[(seed >> 8) % len] = noise[(seed >> 20) % (sizeof noise - 1)];
        }
        err_code rc = state_parse(copy, len, "mem", out, err);
        bad += rc != ERR_OK && rc != ERR_CORRUPT;
        free(copy);
    }
    UNIT_CHECK(bad == 0, "%d damaged inputs gave an unexpected code", bad);
    free(out);
    free(text);
    state_free(st);
}

/* ---- lifecycle --------------------------------------------------------- */

/* Saves a run with probes and unreaped ids, in `phase`, at fx->now. */
static state_t *saved_run(fixture *fx, run_phase phase)
{
    state_t *st = state_new(&fx->store);
    st->phase = phase;
    snprintf(st->room_id, sizeof st->room_id, "room-old");
    snprintf(st->agent_id, sizeof st->agent_id, "agent-old");
    snprintf(st->agent_name, sizeof st->agent_name, "smoke-agent-old");
    snprintf(st->sandbox_name, sizeof st->sandbox_name, "smoke-sbx");
    snprintf(st->workspace, sizeof st->workspace, "/work/ws");
    snprintf(st->sbx_version, sizeof st->sbx_version, "v1.2.3");
    snprintf(st->sdk_version, sizeof st->sdk_version, "6.0.0");
    state_probe p = probe("initial", 1);
    state_add_probe(st, &p);
    UNIT_CHECK(state_save(&fx->store, st, fx->err) == ERR_OK, "save: %s", fx->err);
    return st;
}

/* The archive of `old` exists, is private and holds that run. */
static void check_archive(fixture *fx, const char *name, const state_t *old)
{
    char *path = fx_file(fx, name);
    SAME_INT(file_mode(path), 0600);
    size_t len = 0;
    char *text = tk_read(path, &len);
    state_t *arch = calloc(1, sizeof *arch);
    err_code rc = text ? state_parse(text, len, path, arch, fx->err) : ERR_NOTFOUND;
    if (UNIT_CHECK(rc == ERR_OK, "archive %s: %s", name, err_str(rc))) {
        SAME_STR(arch->run_id, old->run_id);
        SAME_INT(arch->phase, old->phase);
        SAME_INT(arch->nprobes, old->nprobes);
        SAME_STR(arch->room_id, old->room_id);
        SAME_INT(arch->updated_at_ms, old->updated_at_ms);
    }
    free(arch);
    free(text);
    free(path);
}

static void check_carried(const state_t *fresh, const state_t *old)
{
    UNIT_CHECK(strcmp(fresh->run_id, old->run_id) != 0, "run id reused");
    SAME_STR(fresh->room_id, "room-old");
    SAME_STR(fresh->agent_id, "agent-old");
    SAME_STR(fresh->agent_name, "smoke-agent-old");
    SAME_STR(fresh->carried_from, old->run_id);
    SAME_INT(fresh->phase, RUN_STARTED);
    SAME_INT(fresh->nprobes, 0);
}

static void test_terminal_runs_rotate(void)
{
    static const run_phase terminal[] = {RUN_COMPLETED, RUN_FAILED};
    for (int i = 0; i < 2; i++) {
        fixture fx;
        if (!fx_open(&fx))
            return;
        state_t *old = saved_run(&fx, terminal[i]);
        fx.now.wall_ms += 1000;
        state_t *st = NULL;
        int rotated = 0;
        err_code rc = state_open_run(&fx.store, &st, &rotated, fx.err);
        if (UNIT_CHECK(rc == ERR_OK && rotated == 1, "open_run on %s: %s rotated=%d",
                       state_run_phase_name(terminal[i]), fx.err, rotated)) {
            check_carried(st, old);
            SAME_STR(st->sandbox_name, ""); /* only begin_provision keeps it */
            char name[64];
            snprintf(name, sizeof name, "state.%s.json", old->run_id);
            check_archive(&fx, name, old);
            state_t *disk = NULL;
            state_load(&fx.store, &disk, fx.err);
            UNIT_CHECK(disk && strcmp(disk->run_id, st->run_id) == 0,
                       "state.json does not hold the new run");
            SAME_INT(disk ? disk->updated_at_ms : 0, T0 + 1000);
            state_free(disk);
        }
        state_free(st);
        state_free(old);
        fx_close(&fx);
    }
}

static void test_stale_after_12_hours(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    state_t *old = saved_run(&fx, RUN_AWAITING_WIFI);
    UNIT_CHECK(!state_is_stale(old, T0 + STATE_STALE_MS), "stale at exactly 12 h");
    UNIT_CHECK(state_is_stale(old, T0 + STATE_STALE_MS + 1), "not stale at 12 h + 1 ms");

    fx.now.wall_ms = T0 + STATE_STALE_MS - 1;
    state_t *st = NULL;
    int rotated = -1;
    err_code rc = state_open_run(&fx.store, &st, &rotated, fx.err);
    UNIT_CHECK(rc == ERR_OK && rotated == 0, "12 h - 1 ms: %s rotated=%d", fx.err, rotated);
    UNIT_CHECK(st && strcmp(st->run_id, old->run_id) == 0, "12 h - 1 ms: a new run");
    state_free(st);
    char names[256];
    list_dir(fx.dir, 0, names, sizeof names);
    SAME_STR(names, "state.json");

    fx.now.wall_ms = T0 + STATE_STALE_MS + 1;
    st = NULL;
    rc = state_open_run(&fx.store, &st, &rotated, fx.err);
    if (UNIT_CHECK(rc == ERR_OK && rotated == 1, "12 h + 1 ms: %s rotated=%d", fx.err, rotated)) {
        check_carried(st, old);
        SAME_INT(st->started_at_ms, T0 + STATE_STALE_MS + 1);
        char name[64];
        snprintf(name, sizeof name, "state.%s.json", old->run_id);
        check_archive(&fx, name, old);
    }
    state_free(st);
    state_free(old);
    fx_close(&fx);
}

static void test_archive_never_overwrites(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    state_t *st = saved_run(&fx, RUN_COMPLETED);
    state_t *old = malloc(sizeof *old);
    *old = *st;
    char taken[64];
    snprintf(taken, sizeof taken, "state.%s.json", old->run_id);
    char *taken_path = fx_file(&fx, taken);
    tk_write(taken_path, "precious");
    err_code rc = state_rotate(&fx.store, &st, fx.err);
    UNIT_CHECK(rc == ERR_OK, "rotate: %s", fx.err);
    UNIT_CHECK(same_bytes(taken_path, "precious", 8), "an existing archive was overwritten");
    char next[64];
    snprintf(next, sizeof next, "state.%s-2.json", old->run_id);
    check_archive(&fx, next, old);
    check_carried(st, old);
    free(taken_path);
    free(old);
    state_free(st);
    fx_close(&fx);
}

static void test_nothing_to_carry_leaves_carried_from_empty(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    state_t *st = state_new(&fx.store);
    st->phase = RUN_COMPLETED;
    state_save(&fx.store, st, fx.err);
    err_code rc = state_rotate(&fx.store, &st, fx.err);
    UNIT_CHECK(rc == ERR_OK, "rotate: %s", fx.err);
    SAME_STR(st->carried_from, "");
    SAME_STR(st->room_id, "");
    state_free(st);
    fx_close(&fx);
}

static void test_open_run_cases(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    state_t *st = NULL;
    int rotated = -1;
    err_code rc = state_open_run(&fx.store, &st, &rotated, fx.err);
    UNIT_CHECK(rc == ERR_OK && rotated == 0, "no file: %s", fx.err);
    UNIT_CHECK(access(fx.store.path, F_OK) == 0, "no file: the new run was not saved");
    char first[9];
    snprintf(first, sizeof first, "%s", st ? st->run_id : "");
    state_free(st);

    fx.now.wall_ms += HOUR_MS; /* fresh: an hour old, not terminal */
    st = NULL;
    rc = state_open_run(&fx.store, &st, NULL, fx.err);
    UNIT_CHECK(rc == ERR_OK && st && strcmp(st->run_id, first) == 0, "fresh run not continued");
    state_free(st);
    char names[256];
    list_dir(fx.dir, 0, names, sizeof names);
    SAME_STR(names, "state.json");
    fx_close(&fx);
}

static void test_begin_provision(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    /* No probes yet: the same run, nothing archived. */
    state_t *st = state_new(&fx.store);
    state_save(&fx.store, st, fx.err);
    state_t *same = st;
    int rotated = -1;
    err_code rc = state_begin_provision(&fx.store, &st, &rotated, fx.err);
    UNIT_CHECK(rc == ERR_OK && rotated == 0 && st == same, "no probes: rotated");
    state_free(st);

    /* Daemon restart with probes: the same run. */
    st = saved_run(&fx, RUN_DAEMON_RESTART);
    same = st;
    rc = state_begin_provision(&fx.store, &st, &rotated, fx.err);
    UNIT_CHECK(rc == ERR_OK && rotated == 0 && st == same, "daemon-restart: rotated");
    char names[256];
    list_dir(fx.dir, 0, names, sizeof names);
    SAME_STR(names, "state.json");

    /* Probes in another phase: a new run that keeps the sandbox facts. */
    st->phase = RUN_AWAITING_WIFI;
    state_save(&fx.store, st, fx.err);
    state_t *old = malloc(sizeof *old);
    *old = *st;
    rc = state_begin_provision(&fx.store, &st, &rotated, fx.err);
    if (UNIT_CHECK(rc == ERR_OK && rotated == 1, "probes: %s rotated=%d", fx.err, rotated)) {
        check_carried(st, old);
        SAME_STR(st->sandbox_name, "smoke-sbx");
        SAME_STR(st->workspace, "/work/ws");
        SAME_STR(st->sbx_version, "v1.2.3");
        SAME_STR(st->sdk_version, "6.0.0");
        char name[64];
        snprintf(name, sizeof name, "state.%s.json", old->run_id);
        check_archive(&fx, name, old);
        state_t *disk = NULL;
        state_load(&fx.store, &disk, fx.err);
        UNIT_CHECK(disk && strcmp(disk->sandbox_name, "smoke-sbx") == 0 &&
                       strcmp(disk->run_id, st->run_id) == 0,
                   "the new run on disk lacks the sandbox facts");
        state_free(disk);
    }
    free(old);
    state_free(st);
    fx_close(&fx);
}

/* ---- probes, phases, residual checks, verdict ---------------------------- */

static void test_latest_probe_and_attempts(void)
{
    state_t *st = state_new(NULL);
    state_probe p = probe("initial", 0);
    snprintf(p.detail, sizeof p.detail, "first");
    state_add_probe(st, &p);
    p = probe("after-wifi-reconnect", 1);
    state_add_probe(st, &p);
    p = probe("initial", 1);
    snprintf(p.detail, sizeof p.detail, "second");
    state_add_probe(st, &p);
    const state_probe *latest = state_latest_probe(st, "initial");
    UNIT_CHECK(latest && latest->passed && strcmp(latest->detail, "second") == 0,
               "latest initial is not the second attempt");
    SAME_INT(state_probe_attempts(st, "initial"), 2);
    SAME_INT(state_probe_attempts(st, "after-wifi-reconnect"), 1);
    SAME_INT(state_probe_attempts(st, "after-sleep-wake"), 0);
    UNIT_CHECK(state_latest_probe(st, "after-sleep-wake") == NULL, "a probe never made");
    p = probe("", 1);
    SAME_INT(state_add_probe(st, &p), ERR_USAGE);
    SAME_INT(state_add_probe(NULL, &p), ERR_USAGE);
    state_free(st);
}

static void test_probe_table_fills(void)
{
    state_t *st = state_new(NULL);
    state_probe p = probe("initial", 1);
    for (int i = 0; i < STATE_MAX_PROBES; i++)
        SAME_INT(state_add_probe(st, &p), ERR_OK);
    SAME_INT(state_add_probe(st, &p), ERR_FULL);
    SAME_INT(st->nprobes, STATE_MAX_PROBES);
    state_free(st);
}

static state_verdict verdict_with(run_phase phase, const char *const *labels,
                                  const int *passed, int n)
{
    state_t *st = state_new(NULL);
    st->phase = phase;
    for (int i = 0; i < n; i++) {
        state_probe p = probe(labels[i], passed[i]);
        state_add_probe(st, &p);
    }
    state_verdict v = state_verdict_of(st);
    state_free(st);
    return v;
}

static void test_verdict_matrix(void)
{
    const char *const *all = state_mandatory_probes;
    const int pass4[] = {1, 1, 1, 1};
    const int fail1[] = {1, 0, 1, 1};
    SAME_INT(verdict_with(RUN_COMPLETED, all, pass4, 4), VERDICT_PASS);
    SAME_INT(verdict_with(RUN_COMPLETED, all, fail1, 4), VERDICT_FAIL);
    SAME_INT(verdict_with(RUN_COMPLETED, all, pass4, 3), VERDICT_INCOMPLETE); /* one missing */
    SAME_INT(verdict_with(RUN_STARTED, all, pass4, 0), VERDICT_INCOMPLETE);
    SAME_INT(verdict_with(RUN_FAILED, all, pass4, 4), VERDICT_FAIL);
    SAME_INT(verdict_with(RUN_AWAITING_WIFI, all, fail1, 2), VERDICT_FAIL); /* fail beats missing */

    const char *retry[] = {"initial", "initial", "after-wifi-reconnect", "after-sleep-wake",
                           "after-daemon-restart"};
    const int fail_then_pass[] = {0, 1, 1, 1, 1};
    const int pass_then_fail[] = {1, 0, 1, 1, 1};
    SAME_INT(verdict_with(RUN_COMPLETED, retry, fail_then_pass, 5), VERDICT_PASS);
    SAME_INT(verdict_with(RUN_COMPLETED, retry, pass_then_fail, 5), VERDICT_FAIL);

    SAME_STR(state_verdict_name(VERDICT_PASS), "PASS");
    SAME_STR(state_verdict_name(VERDICT_FAIL), "FAIL");
    SAME_STR(state_verdict_name(VERDICT_INCOMPLETE), "INCOMPLETE");
}

static void test_phase_results_replace_by_name(void)
{
    state_t *st = state_new(NULL);
    SAME_INT(state_set_phase(st, "initial", RESULT_FAILED, T0, 10, "no reply"), ERR_OK);
    SAME_INT(state_set_phase(st, "sandbox", RESULT_PASSED, T0, 5, NULL), ERR_OK);
    SAME_INT(state_set_phase(st, "initial", RESULT_PASSED, T0 + 9, 20, "ok"), ERR_OK);
    SAME_INT(st->nphases, 2);
    const state_phase_result *r = state_phase(st, "initial");
    UNIT_CHECK(r && r->status == RESULT_PASSED && r->at_ms == T0 + 9 && r->duration_ms == 20 &&
                   strcmp(r->detail, "ok") == 0,
               "initial was not replaced");
    SAME_STR(st->phases[0].name, "initial"); /* replaced in place */
    UNIT_CHECK(state_phase(st, "report") == NULL, "a phase never run has a result");

    SAME_INT(state_set_phase(st, "initial", RESULT_NONE, 0, 0, NULL), ERR_OK);
    UNIT_CHECK(state_phase(st, "initial") == NULL, "RESULT_NONE did not clear it");
    SAME_INT(st->nphases, 1);
    SAME_STR(st->phases[0].name, "sandbox");

    SAME_INT(state_set_phase(st, "", RESULT_PASSED, 0, 0, NULL), ERR_USAGE);
    SAME_INT(state_set_phase(st, "a-phase-name-far-longer-than-the-key", RESULT_PASSED, 0, 0, NULL),
             ERR_USAGE);
    SAME_INT(state_set_phase(st, "x", (state_result)9, 0, 0, NULL), ERR_USAGE);
    for (int i = st->nphases; i < STATE_MAX_PHASES; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        SAME_INT(state_set_phase(st, name, RESULT_PASSED, 0, 0, NULL), ERR_OK);
    }
    SAME_INT(state_set_phase(st, "one-too-many", RESULT_PASSED, 0, 0, NULL), ERR_FULL);
    SAME_INT(state_set_phase(st, "sandbox", RESULT_FAILED, 0, 0, NULL), ERR_OK);

    /* A long detail is cut on a character boundary, not inside "é". */
    char detail[STATE_TEXT_SZ + 8];
    memset(detail, 'a', STATE_TEXT_SZ - 2);
    memcpy(detail + STATE_TEXT_SZ - 2, "\xc3\xa9zz", 5);
    state_set_phase(st, "sandbox", RESULT_FAILED, 0, 0, detail);
    SAME_INT(strlen(state_phase(st, "sandbox")->detail), STATE_TEXT_SZ - 2);
    state_free(st);
}

static void test_residual_checks(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    state_t *st = state_new(&fx.store);
    SAME_INT(state_set_residual(st, "sleep_wake", "took 40 s"), ERR_OK);
    SAME_INT(state_set_residual(st, "daemon_restart", "agent relaunched"), ERR_OK);
    SAME_INT(state_set_residual(st, "wifi", "nope"), ERR_USAGE);
    SAME_INT(state_set_residual(st, NULL, "nope"), ERR_USAGE);
    UNIT_CHECK(state_residual(st, "wifi") == NULL, "unknown check has text");
    state_save(&fx.store, st, fx.err);
    state_t *back = NULL;
    state_load(&fx.store, &back, fx.err);
    UNIT_CHECK(back && strcmp(state_residual(back, "sleep_wake"), "took 40 s") == 0 &&
                   strcmp(state_residual(back, "daemon_restart"), "agent relaunched") == 0,
               "residual checks lost on save");
    state_free(back);
    state_free(st);
    fx_close(&fx);
}

static void test_names(void)
{
    for (int p = 0; p < RUN__COUNT; p++) {
        run_phase back = RUN__COUNT;
        const char *name = state_run_phase_name((run_phase)p);
        UNIT_CHECK(state_run_phase_parse(name, &back) == ERR_OK && back == (run_phase)p,
                   "phase %d \"%s\" does not parse back", p, name);
    }
    SAME_STR(state_run_phase_name(RUN_AWAITING_WIFI), "awaiting-wifi-recovery");
    SAME_STR(state_run_phase_name(RUN_AWAITING_SLEEP), "awaiting-sleep-wake");
    SAME_STR(state_run_phase_name(RUN_DAEMON_RESTART), "daemon-restart");
    run_phase out = RUN_STARTED;
    SAME_INT(state_run_phase_parse("Completed", &out), ERR_USAGE);
    SAME_STR(state_result_name(RESULT_NONE), "");
    SAME_STR(state_result_name(RESULT_SKIPPED), "skipped");
    SAME_STR(state_mandatory_probes[0], "initial");
    SAME_STR(state_mandatory_probes[3], "after-daemon-restart");
}

/* ---- redaction and the lock -------------------------------------------- */

#define CANARY "canary-5e1f0a77c3d2"

static void test_save_redacts_and_stays_json(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    redact_add_secret(CANARY);
    state_t *st = state_new(&fx.store);
    state_probe p = probe("initial", 0);
    snprintf(p.detail, sizeof p.detail, "server said " CANARY " was bad");
    state_add_probe(st, &p);
    /* A line pattern inside a string must not eat the closing quote. */
    state_set_phase(st, "initial", RESULT_FAILED, T0, 1, "X-API-Key: abc\nnext");
    snprintf(st->evidence.wifi.disconnect_line, sizeof st->evidence.wifi.disconnect_line,
             "GET /x?api_key=" CANARY "&y=1");
    err_code rc = state_save(&fx.store, st, fx.err);
    UNIT_CHECK(rc == ERR_OK, "save: %s", fx.err);
    char *text = tk_read(fx.store.path, NULL);
    UNIT_CHECK(text && !strstr(text, CANARY), "the canary reached the file");
    UNIT_CHECK(text && strstr(text, "server said [REDACTED] was bad"), "no mask in:\n%s", text);
    state_t *back = NULL;
    rc = state_load(&fx.store, &back, fx.err);
    if (UNIT_CHECK(rc == ERR_OK, "redacted file does not load: %s", fx.err)) {
        SAME_STR(state_phase(back, "initial")->detail, "X-API-Key: [REDACTED]\nnext");
        UNIT_CHECK(strstr(back->evidence.wifi.disconnect_line, CANARY) == NULL,
                   "canary in disconnect_line");
    }
    /* The archive is redacted too. */
    st->phase = RUN_COMPLETED;
    char old_id[9];
    memcpy(old_id, st->run_id, sizeof old_id);
    state_rotate(&fx.store, &st, fx.err);
    char name[64];
    snprintf(name, sizeof name, "state.%s.json", old_id);
    char *arch_path = fx_file(&fx, name);
    char *arch = tk_read(arch_path, NULL);
    UNIT_CHECK(arch && !strstr(arch, CANARY) && strstr(arch, "[REDACTED]"), "archive not redacted");
    free(arch);
    free(arch_path);
    free(text);
    state_free(back);
    state_free(st);
    redact_clear();
    fx_close(&fx);
}

/* A child tries the lock the parent holds: it must time out, and only
 * after waiting; once released, a child gets it at once. */
static int child_lock_result(fixture *fx, int timeout_ms)
{
    pid_t pid = fork();
    if (pid == 0) {
        int fd = -1;
        char err[ERR_BUFSZ];
        int64_t t0 = clock_mono_ms();
        err_code rc = state_lock(&fx->store, timeout_ms, &fd, err);
        int64_t waited = clock_mono_ms() - t0;
        if (rc == ERR_TIMEOUT)
            _exit(waited >= timeout_ms - 5 ? 10 : 11);
        _exit(rc == ERR_OK ? 0 : 12);
    }
    int status = -1;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

static void test_lock_excludes_another_process(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    int fd = -1;
    err_code rc = state_lock(&fx.store, 0, &fd, fx.err);
    if (!UNIT_CHECK(rc == ERR_OK && fd >= 0, "lock: %s", fx.err)) {
        fx_close(&fx);
        return;
    }
    int held = child_lock_result(&fx, 150);
    UNIT_CHECK(held == 10, "child while held: exit %d (10 = timed out after waiting)", held);
    state_unlock(fd);
    int free_now = child_lock_result(&fx, 150);
    UNIT_CHECK(free_now == 0, "child after unlock: exit %d", free_now);
    fx_close(&fx);
}

const unit_case unit_cases[] = {
    {"round_trip_keeps_every_field", test_round_trip_keeps_every_field},
    {"parse_of_to_json_is_identity", test_parse_of_to_json_is_identity},
    {"defaults_and_unknown_fields", test_defaults_and_unknown_fields},
    {"new_run", test_new_run},
    {"file_modes_and_no_temp_files", test_file_modes_and_no_temp_files},
    {"store_init_refusals", test_store_init_refusals},
    {"corrupt_files_are_named_and_never_replaced", test_corrupt_files_are_named_and_never_replaced},
    {"overfull_tables_are_corrupt", test_overfull_tables_are_corrupt},
    {"truncated_real_file", test_truncated_real_file},
    {"parse_survives_damage", test_parse_survives_damage},
    {"terminal_runs_rotate", test_terminal_runs_rotate},
    {"stale_after_12_hours", test_stale_after_12_hours},
    {"archive_never_overwrites", test_archive_never_overwrites},
    {"nothing_to_carry_leaves_carried_from_empty", test_nothing_to_carry_leaves_carried_from_empty},
    {"open_run_cases", test_open_run_cases},
    {"begin_provision", test_begin_provision},
    {"latest_probe_and_attempts", test_latest_probe_and_attempts},
    {"probe_table_fills", test_probe_table_fills},
    {"verdict_matrix", test_verdict_matrix},
    {"phase_results_replace_by_name", test_phase_results_replace_by_name},
    {"residual_checks", test_residual_checks},
    {"names", test_names},
    {"save_redacts_and_stays_json", test_save_redacts_and_stays_json},
    {"lock_excludes_another_process", test_lock_excludes_another_process},
    {NULL, NULL},
};
