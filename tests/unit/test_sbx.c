/* sbx: the parsers on recorded outputs of several sbx versions
 * (tests/data/sbx) and on garbage, then every wrapper against the fake sbx,
 * including a hanging one and sbx's own error lines. */
#include "sbx.h"
#include "unit.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "platform.h"
#include "redact.h"
#include "tk.h"
#include "tk_sbx.h"

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static char *data(const char *name, size_t *len)
{
    char *path = tk_path(SMOKE_TEST_DATA "/sbx", name);
    char *text = tk_read(path, len);
    if (!text)
        fprintf(stderr, "missing test data %s\n", path);
    free(path);
    return text;
}

/* ---- sbx_parse_version ---- */

static void expect_version(const char *file, const char *want)
{
    size_t len;
    char *text = data(file, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    char v[SBX_VERSION_SZ], err[ERR_BUFSZ];
    err_code rc = sbx_parse_version(text, len, v, err);
    UNIT_CHECK(rc == ERR_OK && !strcmp(v, want), "%s: rc %d, got '%s', want '%s'", file, rc, v,
               want);
    free(text);
}

static void test_version_recorded(void)
{
    expect_version("version-v0.45.1.txt", "v0.45.1");
    expect_version("version-v0.34.0.txt", "v0.34.0");
    expect_version("version-v0.39.0-short.txt", "v0.39.0");
    expect_version("version-v0.43.0-rc3.txt", "v0.43.0-rc3");
    expect_version("version-v0.29.0-legacy.txt", "v0.29.0");
    expect_version("version-v0.31.3-legacy-daemon-down.txt", "v0.31.3");
    size_t len;
    char *text = data("version-garbage.txt", &len);
    char v[SBX_VERSION_SZ], err[ERR_BUFSZ];
    CU_ASSERT_EQUAL(sbx_parse_version(text, len, v, err), ERR_CORRUPT);
    CU_ASSERT_STRING_EQUAL(v, "");
    free(text);
}

static void test_version_edges(void)
{
    static const struct {
        const char *in, *want; /* want NULL: no version */
    } cases[] = {
        {"(v10.20.30-rc.1)", "v10.20.30-rc.1"},
        {"sbx version: v1.2.3.", "v1.2.3"},
        {"v1.2.3-", "v1.2.3"},
        {"dev1.2.3 then v4.5.6", "v4.5.6"},
        {"v1.2", NULL},
        {"v1.2.x", NULL},
        {"v1.2.3abc", NULL},
        {"1.2.3", NULL},
        {"", NULL},
    };
    char v[SBX_VERSION_SZ], err[ERR_BUFSZ];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        err_code rc = sbx_parse_version(cases[i].in, strlen(cases[i].in), v, err);
        if (cases[i].want)
            UNIT_CHECK(rc == ERR_OK && !strcmp(v, cases[i].want), "'%s' -> rc %d '%s'",
                       cases[i].in, rc, v);
        else
            UNIT_CHECK(rc == ERR_CORRUPT, "'%s' -> rc %d '%s'", cases[i].in, rc, v);
    }
    /* The length bounds the text: "v1.2.3" cut to 5 bytes is no version. */
    CU_ASSERT_EQUAL(sbx_parse_version("v1.2.3", 5, v, err), ERR_CORRUPT);
    char longer[200] = "v1.2.3-";
    memset(longer + 7, 'a', 150);
    longer[157] = '\0';
    CU_ASSERT_EQUAL(sbx_parse_version(longer, strlen(longer), v, err), ERR_CORRUPT);
    CU_ASSERT_EQUAL(sbx_parse_version(NULL, 0, v, err), ERR_CORRUPT);
}

/* ---- sbx_parse_ls ---- */

static err_code parse_file(const char *file, sbx_list *list)
{
    size_t len;
    char *text = data(file, &len);
    char err[ERR_BUFSZ];
    err_code rc = text ? sbx_parse_ls(text, len, list, err) : ERR_IO;
    free(text);
    return rc;
}

static void test_ls_recorded(void)
{
    sbx_list l;
    CU_ASSERT_EQUAL_FATAL(parse_file("ls-v0.29.json", &l), ERR_OK);
    CU_ASSERT_EQUAL_FATAL(l.count, 1);
    CU_ASSERT_STRING_EQUAL(l.items[0].name, "claude-proj");
    CU_ASSERT_STRING_EQUAL(l.items[0].id, "3f1c9a52-7d4e-4b8a-9c2f-0e6d5b4a3c21");
    CU_ASSERT_STRING_EQUAL(l.items[0].agent, "claude");
    CU_ASSERT_STRING_EQUAL(l.items[0].status, "running");
    CU_ASSERT_EQUAL(l.items[0].n_workspaces, 1);
    CU_ASSERT_STRING_EQUAL(l.items[0].workspaces[0], "/home/user/proj");
    CU_ASSERT_FALSE(sbx_is_stopped(&l.items[0]));
    sbx_list_free(&l);

    /* Banner on stdout before the JSON, and no "id" (v0.31.3, Windows). */
    CU_ASSERT_EQUAL_FATAL(parse_file("ls-v0.31.3-windows-banner.txt", &l), ERR_OK);
    CU_ASSERT_EQUAL_FATAL(l.count, 1);
    CU_ASSERT_PTR_NULL(l.items[0].id);
    CU_ASSERT_TRUE(sbx_is_stopped(&l.items[0]));
    CU_ASSERT_STRING_EQUAL(l.items[0].workspaces[0], "/c/Users/user/work");
    sbx_list_free(&l);

    CU_ASSERT_EQUAL_FATAL(parse_file("ls-v0.38.json", &l), ERR_OK);
    CU_ASSERT_EQUAL_FATAL(l.count, 2);
    const sbx_sandbox *smoke = sbx_list_find(&l, "band-smoke");
    CU_ASSERT_PTR_NOT_NULL_FATAL(smoke);
    CU_ASSERT_EQUAL(smoke->n_workspaces, 2);
    CU_ASSERT_STRING_EQUAL(smoke->workspaces[1], "/Users/me/docs:ro");
    CU_ASSERT_TRUE(sbx_is_stopped(sbx_list_find(&l, "old-one")));
    CU_ASSERT_PTR_NULL(sbx_list_find(&l, "absent"));
    sbx_list_free(&l);

    CU_ASSERT_EQUAL_FATAL(parse_file("ls-v0.43.json", &l), ERR_OK);
    CU_ASSERT_EQUAL(l.count, 1);
    sbx_list_free(&l);

    CU_ASSERT_EQUAL_FATAL(parse_file("ls-v0.45.1.json", &l), ERR_OK);
    CU_ASSERT_EQUAL_FATAL(l.count, 2);
    CU_ASSERT_EQUAL(sbx_list_find(&l, "mountless")->n_workspaces, 0);
    sbx_list_free(&l);

    CU_ASSERT_EQUAL_FATAL(parse_file("ls-ports.json", &l), ERR_OK);
    CU_ASSERT_EQUAL(l.count, 1);
    CU_ASSERT_STRING_EQUAL(l.items[0].name, "web");
    sbx_list_free(&l);
}

static void test_ls_empty_three_ways(void)
{
    static const char *const files[] = {"ls-empty.json", "ls-null.json", "ls-missing-key.json"};
    for (size_t i = 0; i < 3; i++) {
        sbx_list l;
        err_code rc = parse_file(files[i], &l);
        UNIT_CHECK(rc == ERR_OK && l.count == 0, "%s: rc %d count %zu", files[i], rc, l.count);
        sbx_list_free(&l);
    }
}

static void test_ls_garbage(void)
{
    sbx_list l;
    CU_ASSERT_EQUAL(parse_file("ls-table-empty.txt", &l), ERR_CORRUPT);
    CU_ASSERT_EQUAL(l.count, 0);
    static const char *const bad[] = {
        "{\"sandboxes\": \"yes\"}",
        "{\"sandboxes\": [{\"id\": \"no-name\"}]}",
        "{\"sandboxes\": [{\"name\": \"\"}]}",
        "{\"sandboxes\": [1]}",
        "{\"sandboxes\": [{\"name\": \"a\"}, {\"name\": 7}]}",
        "{\"sandboxes\": [",
        "[{\"name\": \"a\"}]",
        "Starting sandboxd daemon...\n",
        "",
    };
    char err[ERR_BUFSZ];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err_code rc = sbx_parse_ls(bad[i], strlen(bad[i]), &l, err);
        UNIT_CHECK(rc == ERR_CORRUPT && l.count == 0 && l.items == NULL, "'%s' -> rc %d", bad[i],
                   rc);
        UNIT_CHECK(err[0] != '\0', "no message for '%s'", bad[i]);
    }
    /* Known fields of the wrong type read as missing; unknown ones are ignored. */
    const char *odd = "{\"sandboxes\":[{\"name\":\"a\",\"id\":5,\"status\":[],\"workspaces\":"
                      "[\"/w\",3,null],\"future\":{\"x\":1}}],\"next\":true}";
    CU_ASSERT_EQUAL_FATAL(sbx_parse_ls(odd, strlen(odd), &l, err), ERR_OK);
    CU_ASSERT_PTR_NULL(l.items[0].id);
    CU_ASSERT_STRING_EQUAL(l.items[0].status, "");
    CU_ASSERT_STRING_EQUAL(l.items[0].agent, "");
    CU_ASSERT_EQUAL(l.items[0].n_workspaces, 1);
    sbx_list_free(&l);
    /* The length bounds the text; a trailing line after the object is fine. */
    const char *tail = "{\"sandboxes\":[{\"name\":\"a\"}]}\nbye\n";
    CU_ASSERT_EQUAL(sbx_parse_ls(tail, strlen(tail), &l, err), ERR_OK);
    sbx_list_free(&l);
    CU_ASSERT_EQUAL(sbx_parse_ls(tail, 10, &l, err), ERR_CORRUPT);
}

/* A small deterministic generator: the same mutations on every run. */
static uint32_t next_rand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static void test_parsers_survive_mutations(void)
{
    static const char *const seeds[] = {"ls-v0.29.json", "ls-v0.31.3-windows-banner.txt",
                                        "ls-v0.38.json", "ls-v0.45.1.json",
                                        "version-v0.29.0-legacy.txt", "exec-no-sandbox-v0.39.stderr"};
    static const char alphabet[] = "{}[]\":,\\\n v0123456789.-nulltrue\xff\x00";
    uint32_t rnd = 0x2545F491u;
    char err[ERR_BUFSZ], v[SBX_VERSION_SZ], line[256];
    int parsed_ok = 0;
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
        size_t len;
        char *orig = data(seeds[s], &len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(orig);
        for (int round = 0; round < 400; round++) {
            char *buf = malloc(len + 1);
            memcpy(buf, orig, len + 1);
            size_t n = len;
            for (int k = 0, edits = 1 + (int)(next_rand(&rnd) % 4); k < edits && n > 0; k++) {
                size_t at = next_rand(&rnd) % n;
                switch (next_rand(&rnd) % 3) {
                case 0: buf[at] = alphabet[next_rand(&rnd) % (sizeof alphabet - 1)]; break;
                case 1: n = at; break; /* cut */
                default: memmove(buf + at, buf + at + 1, n - at - 1); n--; break;
                }
            }
            sbx_list l;
            if (sbx_parse_ls(buf, n, &l, err) == ERR_OK) {
                parsed_ok++;
                for (size_t i = 0; i < l.count; i++)
                    UNIT_CHECK(l.items[i].name && l.items[i].name[0], "empty name accepted");
            }
            sbx_list_free(&l);
            sbx_parse_version(buf, n, v, err);
            sbx_parse_error(buf, n, line, sizeof line);
            free(buf);
        }
        free(orig);
    }
    UNIT_CHECK(parsed_ok > 0, "no mutation parsed at all: the mutator is too harsh");
}

/* ---- sbx_parse_error ---- */

static void expect_error_line(const char *file, const char *want)
{
    size_t len;
    char *text = data(file, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    char line[ERR_BUFSZ];
    int found = sbx_parse_error(text, len, line, sizeof line);
    UNIT_CHECK(found && !strcmp(line, want), "%s: got '%s'", file, line);
    free(text);
}

static void test_error_lines(void)
{
    expect_error_line("exec-no-sandbox-v0.39.stderr", "ERROR: no sandbox named 'none'");
    expect_error_line("create-duplicate.stderr",
                      "ERROR: request failed: 409 Conflict: sandbox \"band-smoke\" already exists");
    expect_error_line("create-policy-uninit-v0.43.stderr",
                      "ERROR: global network policy has not been initialized");
    expect_error_line("not-authenticated-v0.43.stderr", "ERROR: Not authenticated to Docker");
    expect_error_line("stop-not-found-v0.29.stderr", "Error: sandbox 'x' not found");
    expect_error_line("lowercase-error.stderr", "error: daemon is not reachable");
    expect_error_line("exec-autostart-windows-v0.39.stderr",
                      "ERROR: failed to start sandbox: start runtime: request failed: 500 "
                      "Internal Server Error: failed to start runtime");
    expect_error_line("version-flag.stderr", "ERROR: unknown flag: --version");
    char line[64];
    const char *none = "Starting sandboxd daemon...\nall good\n";
    CU_ASSERT_FALSE(sbx_parse_error(none, strlen(none), line, sizeof line));
    CU_ASSERT_STRING_EQUAL(line, "");
    /* Secrets are masked, even when the line is longer than the buffer. */
    CU_ASSERT_EQUAL(redact_add_secret("sekrit-0123456789"), ERR_OK);
    const char *leak = "ERROR: bad header X-API-Key: sekrit-0123456789 and more text after it\n";
    CU_ASSERT_TRUE(sbx_parse_error(leak, strlen(leak), line, sizeof line));
    UNIT_CHECK(!strstr(line, "sekrit") && strstr(line, REDACT_MASK), "got '%s'", line);
    char tiny[24];
    CU_ASSERT_TRUE(sbx_parse_error(leak, strlen(leak), tiny, sizeof tiny));
    UNIT_CHECK(!strstr(tiny, "sekrit"), "got '%s'", tiny);
    redact_clear();
}

static void test_exec_argv(void)
{
    sbx_ctx ctx;
    CU_ASSERT_EQUAL(sbx_init(&ctx, "/opt/sbx", 0, 0, NULL), ERR_OK);
    CU_ASSERT_EQUAL(ctx.timeout_ms, SBX_TIMEOUT_MS);
    CU_ASSERT_EQUAL(ctx.slow_timeout_ms, SBX_SLOW_TIMEOUT_MS);
    const char *const cmd[] = {"uv", "run", "agent.py", NULL};
    const char *const env[] = {"BAND_REST_URL=http://x", "BAND_AGENT_ID=a1", NULL};
    sbx_exec_spec spec = {"box", cmd, env, "/state/agent.env", "/ws"};
    sbx_argv a;
    char err[ERR_BUFSZ];
    CU_ASSERT_EQUAL_FATAL(sbx_exec_argv(&ctx, &spec, &a, err), ERR_OK);
    static const char *const want[] = {"/opt/sbx", "exec", "-e", "BAND_REST_URL=http://x", "-e",
                                       "BAND_AGENT_ID=a1", "--env-file", "/state/agent.env",
                                       "--workdir", "/ws", "box", "uv", "run", "agent.py"};
    CU_ASSERT_EQUAL_FATAL(a.n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < a.n; i++)
        UNIT_CHECK(!strcmp(a.v[i], want[i]), "argv[%zu] = %s, want %s", i, a.v[i], want[i]);
    CU_ASSERT_PTR_NULL(a.v[a.n]);
    sbx_exec_spec minimal = {"box", cmd, NULL, NULL, NULL};
    CU_ASSERT_EQUAL(sbx_exec_argv(&ctx, &minimal, &a, err), ERR_OK);
    CU_ASSERT_EQUAL(a.n, 6);
    sbx_exec_spec nocmd = {"box", NULL, NULL, NULL, NULL};
    CU_ASSERT_EQUAL(sbx_exec_argv(&ctx, &nocmd, &a, err), ERR_USAGE);
    const char *const bad_env[] = {"NOEQUALS", NULL};
    sbx_exec_spec badenv = {"box", cmd, bad_env, NULL, NULL};
    CU_ASSERT_EQUAL(sbx_exec_argv(&ctx, &badenv, &a, err), ERR_USAGE);
    const char *many[SBX_ARGV_MAX + 2];
    for (int i = 0; i < SBX_ARGV_MAX + 1; i++)
        many[i] = "x";
    many[SBX_ARGV_MAX + 1] = NULL;
    sbx_exec_spec toolong = {"box", many, NULL, NULL, NULL};
    CU_ASSERT_EQUAL(sbx_exec_argv(&ctx, &toolong, &a, err), ERR_USAGE);
}

/* ---- the wrappers against the fake ---- */

static void test_version_against_fake(void)
{
    tk_sbx w;
    tk_sbx_setup(&w, NULL);
    sbx_ctx ctx;
    tk_sbx_ctx(&w, &ctx, 10000);
    char v[SBX_VERSION_SZ], err[ERR_BUFSZ];
    err_code rc = sbx_version(&ctx, v, err);
    UNIT_CHECK(rc == ERR_OK && !strcmp(v, "v0.45.1"), "rc %d v '%s': %s", rc, v, err);
    tk_sbx_setenv(&w, "FAKE_SBX_LEGACY_VERSION=1");
    tk_sbx_setenv(&w, "FAKE_SBX_VERSION=v0.29.0");
    rc = sbx_version(&ctx, v, err);
    UNIT_CHECK(rc == ERR_OK && !strcmp(v, "v0.29.0"), "legacy: rc %d v '%s': %s", rc, v, err);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
    sbx_ctx missing;
    sbx_init(&missing, "/nonexistent/sbx", 5000, 0, NULL);
    rc = sbx_version(&missing, v, err);
    UNIT_CHECK(rc == ERR_NOTFOUND && strstr(err, "SBX_BIN"), "rc %d: %s", rc, err);
}

static void test_lifecycle_against_fake(void)
{
    tk_sbx w;
    tk_sbx_setup(&w, "balanced");
    sbx_ctx ctx;
    tk_sbx_ctx(&w, &ctx, 15000);
    char err[ERR_BUFSZ];
    sbx_list l;
    CU_ASSERT_EQUAL(sbx_ls(&ctx, &l, err), ERR_OK);
    CU_ASSERT_EQUAL(l.count, 0);
    sbx_list_free(&l);
    err_code rc = sbx_create(&ctx, "box", w.workspace, err);
    UNIT_CHECK(rc == ERR_OK, "create: %s", err);
    rc = sbx_create(&ctx, "box", w.workspace, err);
    UNIT_CHECK(rc == ERR_PROCESS && strstr(err, "409 Conflict") && strstr(err, "sbx create"),
               "duplicate: rc %d: %s", rc, err);
    sbx_sandbox sb;
    rc = sbx_find(&ctx, "box", &sb, err);
    UNIT_CHECK(rc == ERR_OK, "find: %s", err);
    CU_ASSERT_STRING_EQUAL(sb.status, "running");
    CU_ASSERT_STRING_EQUAL(sb.agent, "shell");
    CU_ASSERT_PTR_NOT_NULL(sb.id);
    CU_ASSERT_TRUE(sb.n_workspaces == 1 && !strcmp(sb.workspaces[0], w.workspace));
    sbx_sandbox_free(&sb);
    CU_ASSERT_EQUAL(sbx_find(&ctx, "other", &sb, err), ERR_NOTFOUND);
    const char *const hosts[] = {"127.0.0.1:9", "*.band.test", NULL};
    rc = sbx_policy_allow(&ctx, "box", hosts, err);
    UNIT_CHECK(rc == ERR_OK, "allow: %s", err);
    proc_result r;
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "policy", "check", "network", "--sandbox", "box",
                               "api.band.test", NULL), 0);
    proc_result_free(&r);
    const char *const comma[] = {"a.test,b.test", NULL};
    CU_ASSERT_EQUAL(sbx_policy_allow(&ctx, "box", comma, err), ERR_USAGE);
    const char *const none[] = {NULL};
    CU_ASSERT_EQUAL(sbx_policy_allow(&ctx, "box", none, err), ERR_USAGE);
    rc = sbx_policy_allow(&ctx, "ghost", hosts, err);
    UNIT_CHECK(rc == ERR_PROCESS && strstr(err, "no sandbox named 'ghost'"), "rc %d: %s", rc, err);
    char *log = NULL;
    rc = sbx_policy_log(&ctx, "box", &log, err);
    UNIT_CHECK(rc == ERR_OK && log && strstr(log, "Blocked requests:") &&
                   strstr(log, "Allowed requests:"),
               "policy log: rc %d: %s", rc, log ? log : err);
    free(log);
    CU_ASSERT_EQUAL(sbx_daemon_stop(&ctx, err), ERR_OK);
    rc = sbx_find(&ctx, "box", &sb, err); /* ls starts the daemon again */
    CU_ASSERT_TRUE(rc == ERR_OK && sbx_is_stopped(&sb));
    sbx_sandbox_free(&sb);
    CU_ASSERT_EQUAL(sbx_daemon_start(&ctx, err), ERR_OK);
    CU_ASSERT_EQUAL(sbx_rm(&ctx, "box", err), ERR_OK);
    CU_ASSERT_EQUAL(sbx_find(&ctx, "box", &sb, err), ERR_NOTFOUND);
    rc = sbx_rm(&ctx, "box", err);
    UNIT_CHECK(rc == ERR_PROCESS && strstr(err, "no sandbox named 'box'"), "rm twice: %s", err);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

static void test_create_without_policy(void)
{
    tk_sbx w;
    tk_sbx_setup(&w, NULL);
    sbx_ctx ctx;
    tk_sbx_ctx(&w, &ctx, 15000);
    char err[ERR_BUFSZ];
    err_code rc = sbx_create(&ctx, "box", w.workspace, err);
    UNIT_CHECK(rc == ERR_PROCESS && strstr(err, "ERROR: global network policy has not been initialized"),
               "rc %d: %s", rc, err);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

static void test_ls_variants_against_fake(void)
{
    tk_sbx w;
    tk_sbx_setup(&w, "allow-all");
    proc_result r;
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "create", "--name", "box", "shell", w.workspace, NULL), 0);
    proc_result_free(&r);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "daemon", "stop", NULL), 0);
    proc_result_free(&r);
    /* Windows mode: the auto-start banner lands on stdout before the JSON. */
    tk_sbx_setenv(&w, "FAKE_SBX_BANNER_STDOUT=1");
    tk_sbx_setenv(&w, "FAKE_SBX_NO_ID=1");
    tk_sbx_setenv(&w, "FAKE_SBX_EXTRA_FIELDS=1");
    sbx_ctx ctx;
    tk_sbx_ctx(&w, &ctx, 15000);
    char err[ERR_BUFSZ];
    sbx_list l;
    err_code rc = sbx_ls(&ctx, &l, err);
    UNIT_CHECK(rc == ERR_OK && l.count == 1, "rc %d: %s", rc, err);
    if (l.count == 1) {
        CU_ASSERT_PTR_NULL(l.items[0].id);
        CU_ASSERT_TRUE(sbx_is_stopped(&l.items[0]));
    }
    sbx_list_free(&l);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

static void test_exec_against_fake(void)
{
    tk_sbx w;
    tk_sbx_setup(&w, "balanced");
    sbx_ctx ctx;
    tk_sbx_ctx(&w, &ctx, 15000);
    char err[ERR_BUFSZ];
    CU_ASSERT_EQUAL_FATAL(sbx_create(&ctx, "box", w.workspace, err), ERR_OK);
    char *envfile = tk_path(w.state, "agent.env");
    tk_write(envfile, "FROM_FILE=yes\n");
    const char *const cmd[] = {"sh", "-c", "echo $FROM_E $FROM_FILE; pwd; echo oops >&2; exit 3",
                               NULL};
    const char *const env[] = {"FROM_E=hello", NULL};
    sbx_exec_spec spec = {"box", cmd, env, envfile, "/tmp"};
    proc_result r;
    err_code rc = sbx_exec(&ctx, &spec, 0, &r, err);
    UNIT_CHECK(rc == ERR_OK, "exec: %s", err);
    CU_ASSERT_TRUE(r.exited && r.status == 3);
    CU_ASSERT_STRING_EQUAL(r.out.data, "hello yes\n/tmp\n");
    CU_ASSERT_STRING_EQUAL(r.err.data, "oops\n");
    proc_result_free(&r);
    /* sbx's own failure, told apart from the command's status 1. */
    const char *const one[] = {"false", NULL};
    sbx_exec_spec plain = {"box", one, NULL, NULL, NULL};
    CU_ASSERT_EQUAL(sbx_exec(&ctx, &plain, 0, &r, err), ERR_OK);
    CU_ASSERT_TRUE(r.exited && r.status == 1);
    proc_result_free(&r);
    sbx_exec_spec ghost = {"ghost", one, NULL, NULL, NULL};
    rc = sbx_exec(&ctx, &ghost, 0, &r, err);
    UNIT_CHECK(rc == ERR_PROCESS && strstr(err, "ERROR: no sandbox named 'ghost'"), "rc %d: %s",
               rc, err);
    proc_result_free(&r);
    /* A command longer than the call's own bound is killed at it. */
    const char *const slow[] = {"sleep", "20", NULL};
    sbx_exec_spec sleeper = {"box", slow, NULL, NULL, NULL};
    int64_t t0 = clock_mono_ms();
    rc = sbx_exec(&ctx, &sleeper, 500, &r, err);
    UNIT_CHECK(rc == ERR_TIMEOUT && clock_mono_ms() - t0 < 4000, "rc %d after %lld ms: %s", rc,
               (long long)(clock_mono_ms() - t0), err);
    proc_result_free(&r);
    free(envfile);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

/* The agent launch of phase 04 and the restart of phase 10, in small:
 * exec launched detached, ended by `daemon stop`. */
static void test_detached_exec_ended_by_daemon_stop(void)
{
    tk_sbx w;
    tk_sbx_setup(&w, "balanced");
    sbx_ctx ctx;
    tk_sbx_ctx(&w, &ctx, 15000);
    char err[ERR_BUFSZ];
    CU_ASSERT_EQUAL_FATAL(sbx_create(&ctx, "box", w.workspace, err), ERR_OK);
    const char *const cmd[] = {"sh", "-c", "echo agent up; exec sleep 30", NULL};
    sbx_exec_spec spec = {"box", cmd, NULL, NULL, NULL};
    sbx_argv a;
    CU_ASSERT_EQUAL_FATAL(sbx_exec_argv(&ctx, &spec, &a, err), ERR_OK);
    char *log = tk_path(w.state, "agent.log");
    proc_env env = {NULL, w.env};
    proc_detached d;
    err_code rc = proc_launch_detached(a.v, w.state, &env, log, &d, err);
    UNIT_CHECK(rc == ERR_OK, "launch: %s", err);
    char *text = NULL;
    for (int i = 0; i < 100; i++) {
        free(text);
        text = tk_read(log, NULL);
        if (text && strstr(text, "agent up"))
            break;
        nap_ms(50);
    }
    UNIT_CHECK(text && strstr(text, "agent up"), "the agent never started");
    free(text);
    CU_ASSERT_TRUE(plat_proc_alive(d.pid, d.start_token));
    CU_ASSERT_EQUAL(sbx_daemon_stop(&ctx, err), ERR_OK);
    int ended = 0;
    for (int i = 0; i < 100 && !ended; i++) {
        ended = !plat_proc_alive(d.pid, d.start_token);
        nap_ms(30);
    }
    CU_ASSERT_TRUE(ended);
    text = tk_read(log, NULL);
    UNIT_CHECK(text && strstr(text, "ERROR: exec session ended"), "log:\n%s", text);
    free(text);
    sbx_sandbox sb;
    CU_ASSERT_EQUAL(sbx_find(&ctx, "box", &sb, err), ERR_OK);
    CU_ASSERT_TRUE(sbx_is_stopped(&sb));
    sbx_sandbox_free(&sb);
    free(log);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

static void test_hanging_sbx_times_out(void)
{
    tk_sbx w;
    tk_sbx_setup(&w, "balanced");
    sbx_ctx ctx;
    tk_sbx_ctx(&w, &ctx, 500);
    char err[ERR_BUFSZ];
    proc_result r;
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "_fault", "hang", "ls", NULL), 0);
    proc_result_free(&r);
    sbx_list l;
    int64_t t0 = clock_mono_ms();
    err_code rc = sbx_ls(&ctx, &l, err);
    int64_t took = clock_mono_ms() - t0;
    UNIT_CHECK(rc == ERR_TIMEOUT, "rc %d: %s", rc, err);
    UNIT_CHECK(took >= 450 && took < 4000, "took %lld ms", (long long)took);
    UNIT_CHECK(strstr(err, "sbx ls") && strstr(err, "did not answer"), "message: %s", err);
    CU_ASSERT_EQUAL(tk_sbx_run(&w, &r, "_fault", "hang", "off", NULL), 0);
    proc_result_free(&r);
    tk_sbx_ctx(&w, &ctx, 10000); /* short bounds only where the answer never comes */
    CU_ASSERT_EQUAL(sbx_ls(&ctx, &l, err), ERR_OK);
    sbx_list_free(&l);
    /* The other way: FAKE_SBX_HANG in the environment of one invocation. */
    tk_sbx_ctx(&w, &ctx, 500);
    tk_sbx_setenv(&w, "FAKE_SBX_HANG=version");
    char v[SBX_VERSION_SZ];
    CU_ASSERT_EQUAL(sbx_version(&ctx, v, err), ERR_TIMEOUT);

    /* A wait over 2 s shows what it waits for, the time elapsed and the
     * deadline, then how it ended. */
    FILE *shown = tmpfile();
    tk_sbx_ctx(&w, &ctx, 2400);
    ctx.progress = shown;
    CU_ASSERT_EQUAL(sbx_version(&ctx, v, err), ERR_TIMEOUT);
    char text[1024] = "";
    rewind(shown);
    size_t n = fread(text, 1, sizeof text - 1, shown);
    text[n] = '\0';
    fclose(shown);
    UNIT_CHECK(strstr(text, "waiting for sbx version: ") && strstr(text, "elapsed, deadline 2.4 s") &&
                   strstr(text, "sbx version: failed after"),
               "progress shown: %s", text);
    CU_ASSERT_EQUAL(tk_sbx_teardown(&w), 0);
}

const unit_case unit_cases[] = {
    {"version_recorded", test_version_recorded},
    {"version_edges", test_version_edges},
    {"ls_recorded", test_ls_recorded},
    {"ls_empty_three_ways", test_ls_empty_three_ways},
    {"ls_garbage", test_ls_garbage},
    {"parsers_survive_mutations", test_parsers_survive_mutations},
    {"error_lines", test_error_lines},
    {"exec_argv", test_exec_argv},
    {"version_against_fake", test_version_against_fake},
    {"lifecycle_against_fake", test_lifecycle_against_fake},
    {"create_without_policy", test_create_without_policy},
    {"ls_variants_against_fake", test_ls_variants_against_fake},
    {"exec_against_fake", test_exec_against_fake},
    {"detached_exec_ended_by_daemon_stop", test_detached_exec_ended_by_daemon_stop},
    {"hanging_sbx_times_out", test_hanging_sbx_times_out},
    {NULL, NULL},
};
