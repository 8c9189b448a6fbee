/* preflight: `band-smoke preflight` against the fake sbx, every check
 * passing and then each failing alone (no sbx, an old or unreadable sbx
 * version, a bad sandbox name, no workspace, the workspace being $HOME or
 * inside the checkout through a symlink, production URLs in several
 * spellings, a missing or short key), the skill-link INFO line, the phase
 * recording sbx_version; and never a value in the output: a canary key, a
 * distinctive workspace path, the sandbox name, the URLs and SBX_BIN never
 * appear. */
#include "preflight.h"
#include "unit.h"

#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state.h"
#include "tk.h"
#include "tk_run.h"
#include "tk_sbx.h"

#define CANARY "canary-user-key-9c2e4b7a1f"
#define SANDBOX "smoke-pf-7e1"
#define WS_TAG "distinctive-ws-3a9f"
#define STAGING_HOST "staging.band.example"

typedef struct world {
    tk_sbx sbx;
    char *dir;  /* temp root: home/, state/, the workspace parent */
    char *home; /* a HOME of the test's own */
    char *ws;   /* SBX_WORKSPACE: dir/WS_TAG (not created) */
    char buf[16][1400];
    char *env[24];
    int n;
} world;

static void setv(world *w, const char *name, const char *value)
{
    snprintf(w->buf[w->n], sizeof w->buf[0], "%s=%s", name, value);
    w->env[w->n] = w->buf[w->n];
    w->n++;
    w->env[w->n] = NULL;
}

static void world_open(world *w)
{
    memset(w, 0, sizeof *w);
    tk_sbx_setup(&w->sbx, "balanced");
    w->dir = tk_tmpdir("preflight");
    w->home = tk_path(w->dir, "home");
    w->ws = tk_path(w->dir, WS_TAG);
    mkdir(w->home, 0700);
    char *state = tk_path(w->dir, "state");
    setv(w, "SMOKE_ENV_FILE", "/nonexistent/band-smoke-preflight.env");
    setv(w, "SMOKE_STATE_DIR", state);
    setv(w, "HOME", w->home);
    setv(w, "SBX_BIN", w->sbx.sbx);
    setv(w, "SBX_SANDBOX", SANDBOX);
    setv(w, "SBX_WORKSPACE", w->ws);
    setv(w, "BAND_REST_URL", "https://" STAGING_HOST);
    setv(w, "BAND_WS_URL", "wss://" STAGING_HOST "/api/v1/socket/websocket");
    setv(w, "BAND_API_KEY_USER", CANARY);
    w->env[w->n++] = (char *)w->sbx.env[0]; /* FAKE_SBX_STATE */
    w->env[w->n] = NULL;
    free(state);
}

static void world_close(world *w)
{
    UNIT_CHECK(tk_sbx_teardown(&w->sbx) == 0, "the fake sbx left processes running");
    tk_rmtree(w->dir);
    free(w->dir);
    free(w->home);
    free(w->ws);
}

static const char *band_smoke(void)
{
    const char *bin = getenv("BAND_SMOKE");
    return bin && *bin ? bin : SMOKE_BINARY_DIR "/band-smoke";
}

/* Runs band-smoke with args and the world's environment plus `extra`
 * ("K=V", later wins; "K=" unsets); checks that no value leaked. */
static int smoke(world *w, const char *const *extra, tk_result *r, const char *a, const char *b,
                 const char *c)
{
    char *argv[] = {(char *)band_smoke(), (char *)a, (char *)b, (char *)c, NULL};
    char *env[48];
    int n = 0;
    for (int i = 0; w->env[i]; i++)
        env[n++] = w->env[i];
    for (int i = 0; extra && extra[i]; i++)
        env[n++] = (char *)extra[i];
    env[n] = NULL;
    tk_run(argv, env, 60000, r);
    static const char *const values[] = {CANARY, WS_TAG, SANDBOX, STAGING_HOST, "app.band.ai/",
                                         "fake-sbx-bin", "/nonexistent/sbx", NULL};
    for (int i = 0; values[i]; i++)
        UNIT_CHECK(strstr(r->output, values[i]) == NULL, "band-smoke %s printed a value (%s):\n%s",
                   a, values[i], r->output);
    return r->status;
}

static int count_lines(const char *out, const char *mark)
{
    int n = 0;
    for (const char *p = out; (p = strstr(p, mark)) != NULL; p++)
        n += p == out || p[-1] == '\n';
    return n;
}

/* `band-smoke preflight` with `extra`: exactly `fails` FAIL lines, each
 * holding one of the fragments (NULL-terminated; none = all pass). */
static void expect(world *w, const char *what, const char *const *extra, int fails,
                   const char *const *fragments)
{
    tk_result r;
    int status = smoke(w, extra, &r, "preflight", NULL, NULL);
    int got = count_lines(r.output, "[FAIL] ");
    UNIT_CHECK(status == (fails ? 1 : 0) && got == fails, "%s: exit %d, %d FAIL lines, want %d:\n%s",
               what, status, got, fails, r.output);
    UNIT_CHECK(count_lines(r.output, "[PASS] ") + got == 10 &&
                   count_lines(r.output, "[INFO] ") == 1,
               "%s: not one line per check:\n%s", what, r.output);
    for (const char *p = r.output; fragments && (p = strstr(p, "[FAIL] ")) != NULL; p++) {
        const char *eol = strchr(p, '\n');
        int len = eol ? (int)(eol - p) : (int)strlen(p), hit = 0;
        for (int i = 0; fragments[i] && !hit; i++) {
            const char *f = strstr(p, fragments[i]);
            hit = f && f < p + len;
        }
        UNIT_CHECK(hit, "%s: unexpected %.*s", what, len, p);
    }
    tk_result_free(&r);
}

/* ---- cases ---- */

static void test_all_pass(void)
{
    world w;
    world_open(&w);
    expect(&w, "all set", NULL, 0, NULL);
    world_close(&w);
}

static void test_no_sbx(void)
{
    world w;
    world_open(&w);
    const char *extra[] = {"SBX_BIN=/nonexistent/sbx", NULL};
    const char *frags[] = {"sbx is not installed", "sbx version: unknown", NULL};
    expect(&w, "no sbx", extra, 2, frags);
    world_close(&w);
}

static void test_sbx_version(void)
{
    world w;
    world_open(&w);
    const char *old[] = {"FAKE_SBX_VERSION=v0.31.3", NULL};
    const char *old_frag[] = {"older than v0.32.0", NULL};
    expect(&w, "sbx v0.31.3", old, 1, old_frag);
    const char *garbage[] = {"FAKE_SBX_VERSION=nightly", NULL};
    const char *garbage_frag[] = {"names no vX.Y.Z", NULL};
    expect(&w, "no version", garbage, 1, garbage_frag);
    world_close(&w);
}

static void test_bad_sandbox_name(void)
{
    static const char *const names[] = {"SBX_SANDBOX=smoke_pf", "SBX_SANDBOX=-smoke",
                                        "SBX_SANDBOX=smoke pf", "SBX_SANDBOX=", NULL};
    const char *frags[] = {"SBX_SANDBOX", NULL};
    world w;
    world_open(&w);
    for (int i = 0; names[i]; i++) {
        const char *extra[] = {names[i], NULL};
        expect(&w, names[i], extra, 1, frags);
    }
    world_close(&w);
}

static void test_workspace_unset(void)
{
    world w;
    world_open(&w);
    const char *unset[] = {"SBX_WORKSPACE=", NULL};
    const char *frags[] = {"SBX_WORKSPACE is unset", "not checked", NULL};
    expect(&w, "unset workspace", unset, 3, frags);
    const char *relative[] = {"SBX_WORKSPACE=" WS_TAG, NULL};
    const char *rel_frags[] = {"absolute path", "not checked", NULL};
    expect(&w, "relative workspace", relative, 3, rel_frags);
    world_close(&w);
}

static void test_workspace_is_home(void)
{
    world w;
    world_open(&w);
    char entry[1200];
    snprintf(entry, sizeof entry, "SBX_WORKSPACE=%s", w.home);
    const char *extra[] = {entry, NULL};
    const char *frags[] = {"SBX_WORKSPACE is $HOME itself", NULL};
    expect(&w, "workspace = $HOME", extra, 1, frags);
    snprintf(entry, sizeof entry, "SBX_WORKSPACE=%s", w.dir); /* above $HOME */
    /* It holds files and no marker too: a second, right, FAIL. */
    const char *above[] = {"SBX_WORKSPACE is a folder above $HOME", "no .band-smoke-workspace",
                           NULL};
    expect(&w, "workspace above $HOME", extra, 2, above);
    world_close(&w);
}

static void test_workspace_in_checkout(void)
{
    world w;
    world_open(&w);
    char *link = tk_path(w.dir, "checkout-link");
    UNIT_CHECK(symlink(SMOKE_SOURCE_DIR, link) == 0, "symlink");
    char entry[1200];
    const char *extra[] = {entry, NULL};
    const char *inside[] = {"inside this checkout", "no .band-smoke-workspace", NULL};
    snprintf(entry, sizeof entry, "SBX_WORKSPACE=%s/" WS_TAG, link); /* does not exist yet */
    expect(&w, "new folder through a symlink", extra, 1, inside);
    snprintf(entry, sizeof entry, "SBX_WORKSPACE=%s/fixtures", link); /* exists */
    expect(&w, "existing folder through a symlink", extra, 2, inside);
    char parent[1024];
    snprintf(parent, sizeof parent, "%s", SMOKE_SOURCE_DIR);
    const char *above = dirname(parent);
    snprintf(entry, sizeof entry, "SBX_WORKSPACE=%s", above);
    /* A checkout under the same folder as the test's HOME (say both in
     * /tmp) makes that folder above $HOME too: a second, right, FAIL. */
    size_t n = strlen(above);
    int also_above_home = strncmp(w.home, above, n) == 0 && (w.home[n] == '/' || n == 1);
    const char *holds[] = {"holds this checkout", "no .band-smoke-workspace",
                           "a folder above $HOME", NULL};
    if (!also_above_home)
        holds[2] = NULL;
    expect(&w, "workspace above the checkout", extra, 2 + also_above_home, holds);
    free(link);
    world_close(&w);
}

static void test_production_urls(void)
{
    static const char *const spellings[][2] = {
        {"BAND_REST_URL=https://app.band.ai", NULL},
        {"BAND_REST_URL=HTTPS://APP.BAND.AI/", NULL},
        {"BAND_REST_URL=https://app.band.ai:443/", NULL},
        {"BAND_WS_URL=wss://app.band.ai/api/v1/socket/websocket", NULL},
        {"BAND_WS_URL=WSS://App.Band.Ai:443/api/v1/socket/websocket/", NULL},
        {"BAND_WS_URL=wss://eu.app.band.ai/socket", NULL},
        {"BAND_BASE_URL=https://app.band.ai.", NULL}, /* the alias wins over BAND_REST_URL */
    };
    const char *frags[] = {"production", NULL};
    world w;
    world_open(&w);
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++)
        expect(&w, spellings[i][0], spellings[i], 1, frags);
    world_close(&w);
}

static void test_missing_key(void)
{
    world w;
    world_open(&w);
    const char *unset[] = {"BAND_API_KEY_USER=", NULL};
    const char *frags[] = {"BAND_API_KEY_USER", NULL};
    expect(&w, "no key", unset, 1, frags);
    const char *shorter[] = {"BAND_API_KEY_USER=k3y", NULL};
    expect(&w, "short key", shorter, 1, frags);
    const char *no_urls[] = {"BAND_REST_URL=", "BAND_WS_URL=", NULL};
    const char *url_frags[] = {"BAND_REST_URL is unset", "BAND_WS_URL is unset", NULL};
    expect(&w, "no URLs", no_urls, 2, url_frags);
    world_close(&w);
}

/* First contact: nothing set. One run names every missing setting, says
 * where settings go and prints a template with names and no values. */
static void test_every_missing_setting_at_once(void)
{
    world w;
    world_open(&w);
    const char *nothing[] = {"BAND_REST_URL=", "BAND_WS_URL=", "BAND_API_KEY_USER=",
                             "SBX_SANDBOX=", "SBX_WORKSPACE=", NULL};
    const char *frags[] = {"BAND_REST_URL is unset", "BAND_WS_URL is unset",
                           "BAND_API_KEY_USER is required", "SBX_SANDBOX is unset",
                           "SBX_WORKSPACE", NULL};
    expect(&w, "nothing set", nothing, 7, frags);
    tk_result r;
    smoke(&w, nothing, &r, "preflight", NULL, NULL);
    UNIT_CHECK(strstr(r.output, "Settings: in the file SMOKE_ENV_FILE names (not found)") != NULL,
               "no word on where settings go:\n%s", r.output);
    for (const char *name = preflight_settings_template; *name; name = strchr(name, '\n') + 1) {
        size_t n = strcspn(name, "\n");
        char line[80];
        snprintf(line, sizeof line, "\n    %.*s\n", (int)n, name);
        UNIT_CHECK(strstr(r.output, line) != NULL, "template line %s missing", line);
        UNIT_CHECK(name[n - 1] == '=' || !memchr(name, '=', n), "template line %.*s holds a "
                   "value", (int)n, name);
    }
    tk_result_free(&r);
    /* With no SMOKE_ENV_FILE, the project root's .env.test is named. */
    const char *default_file[] = {"SMOKE_ENV_FILE=", "SBX_SANDBOX=", NULL};
    smoke(&w, default_file, &r, "preflight", NULL, NULL);
    UNIT_CHECK(strstr(r.output, "Settings: in .env.test at the project root (" SMOKE_SOURCE_DIR
                      "/.env.test") != NULL, "the default file is not named:\n%s", r.output);
    tk_result_free(&r);
    /* Every setting right: no settings help. */
    smoke(&w, NULL, &r, "preflight", NULL, NULL);
    UNIT_CHECK(strstr(r.output, "Settings:") == NULL, "settings help with nothing missing:\n%s",
               r.output);
    tk_result_free(&r);
    world_close(&w);
}

static void info_line(world *w, const char *what, const char *want)
{
    tk_result r;
    int status = smoke(w, NULL, &r, "preflight", NULL, NULL);
    UNIT_CHECK(status == 0 && strstr(r.output, want), "%s: exit %d, want '%s':\n%s", what,
               status, want, r.output);
    tk_result_free(&r);
}

static void test_skill_link(void)
{
    world w;
    world_open(&w);
    info_line(&w, "no link", "[INFO] AI client skill link: none");
    char *claude = tk_path(w.home, ".claude");
    char *skills = tk_path(claude, "skills");
    char *link = tk_path(skills, PREFLIGHT_SKILL_NAME);
    mkdir(claude, 0700);
    mkdir(skills, 0700);
    UNIT_CHECK(symlink(w.dir, link) == 0, "symlink");
    info_line(&w, "a link elsewhere", "is not this checkout's skill/");
    unlink(link);
    UNIT_CHECK(symlink(SMOKE_SOURCE_DIR "/skill", link) == 0, "symlink");
    info_line(&w, "a link here", "links to this checkout's skill/");
    free(link);
    free(skills);
    free(claude);
    world_close(&w);
}

/* The phase runs the same checks and records the version in the run. */
static void test_phase_records_version(void)
{
    world w;
    world_open(&w);
    tk_result r;
    smoke(&w, NULL, &r, "phase", "start", NULL);
    tk_result_free(&r);
    int status = smoke(&w, NULL, &r, "phase", "preflight", NULL);
    UNIT_CHECK(status == 0 && count_lines(r.output, "[PASS] ") == 10, "exit %d:\n%s", status,
               r.output);
    tk_result_free(&r);
    state_store store;
    state_t *st = NULL;
    char err[ERR_BUFSZ], *dir = tk_path(w.dir, "state");
    if (state_store_init(&store, dir, NULL, err) == ERR_OK && state_load(&store, &st, err) == ERR_OK)
        UNIT_CHECK(!strcmp(st->sbx_version, "v0.45.1"), "sbx_version '%s'", st->sbx_version);
    else
        UNIT_CHECK(0, "no run state: %s", err);
    state_free(st);
    const char *no_key[] = {"BAND_API_KEY_USER=", NULL};
    status = smoke(&w, no_key, &r, "phase", "preflight", "--again");
    UNIT_CHECK(status == 1 && strstr(r.output, "[FAIL] "), "a failing check passed the phase: "
               "exit %d\n%s", status, r.output);
    tk_result_free(&r);
    free(dir);
    world_close(&w);
}

/* ---- the exported rules ---- */

static void test_name_rule(void)
{
    static const char *const good[] = {"a", "smoke-1", "Smoke.Box+2", "0box", NULL};
    static const char *const bad[] = {"", "-x", ".x", "+x", "a_b", "a b", "a/b", "a$", "ä",
                                      "0123456789012345678901234567890123456789012345678901234"
                                      "567890123",
                                      NULL};
    for (int i = 0; good[i]; i++)
        UNIT_CHECK(preflight_sandbox_name_ok(good[i]), "refused '%s'", good[i]);
    for (int i = 0; bad[i]; i++)
        UNIT_CHECK(!preflight_sandbox_name_ok(bad[i]), "accepted '%s'", bad[i]);
    UNIT_CHECK(!preflight_sandbox_name_ok(NULL), "accepted NULL");
}

static void test_workspace_rule(void)
{
    char err[ERR_BUFSZ];
    const char *co = SMOKE_SOURCE_DIR, *home = "/root";
    UNIT_CHECK(preflight_check_workspace("/tmp/smoke-ws-x", co, home, err) == ERR_OK, "%s", err);
    UNIT_CHECK(preflight_check_workspace("/tmp//smoke-ws-x/", co, home, err) == ERR_OK, "%s", err);
    static const char *const bad[] = {"", "tmp/x", "/tmp/../root", "/tmp/./x", "/",
                                      SMOKE_SOURCE_DIR, SMOKE_SOURCE_DIR "/build-x", "/root",
                                      NULL};
    for (int i = 0; bad[i]; i++)
        UNIT_CHECK(preflight_check_workspace(bad[i], co, home, err) == ERR_CONFIG,
                   "accepted '%s'", bad[i]);
    UNIT_CHECK(preflight_check_workspace("/tmp/x", co, NULL, err) == ERR_CONFIG &&
                   strstr(err, "HOME is unset"),
               "an unknown HOME passed: %s", err);
}

const unit_case unit_cases[] = {
    {"name_rule", test_name_rule},
    {"workspace_rule", test_workspace_rule},
    {"all_pass", test_all_pass},
    {"no_sbx", test_no_sbx},
    {"sbx_version", test_sbx_version},
    {"bad_sandbox_name", test_bad_sandbox_name},
    {"workspace_unset", test_workspace_unset},
    {"workspace_is_home", test_workspace_is_home},
    {"workspace_in_checkout", test_workspace_in_checkout},
    {"production_urls", test_production_urls},
    {"missing_key", test_missing_key},
    {"every_missing_setting_at_once", test_every_missing_setting_at_once},
    {"skill_link", test_skill_link},
    {"phase_records_version", test_phase_records_version},
    {NULL, NULL},
};
