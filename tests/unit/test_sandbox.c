/* sandbox: create or reuse against the fake sbx, the scoped allowlist in
 * the fake's policy, the marker, the payload copy with the SDK spec, the
 * SDK version from the fake uv and the stand-in; teardown removing only
 * what is ours and refusing unmarked workspaces; a hung sbx failing in
 * time; and the pure pieces (spec check, rewrite, allowlist). */
#include "sandbox.h"
#include "unit.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "preflight.h"
#include "tk.h"
#include "tk_sbx.h"

#define NAME "smoke-box"

typedef struct world {
    tk_sbx sbx;
    sbx_ctx sctx;
    char *ws; /* SBX_WORKSPACE, not created yet */
    config cfg;
    state_store store;
    state_t *st;
} world;

static void world_open(world *w, int timeout_ms)
{
    memset(w, 0, sizeof *w);
    tk_sbx_setup(&w->sbx, "balanced");
    char entry[1200], *agent = tk_bin("fake-agent");
    snprintf(entry, sizeof entry, "FAKE_UV_AGENT=%s", agent);
    free(agent);
    tk_sbx_setenv(&w->sbx, entry);
    tk_sbx_ctx(&w->sbx, &w->sctx, timeout_ms);
    w->ws = tk_path(w->sbx.state, "workspace");
    config *c = &w->cfg;
    snprintf(c->project_root, sizeof c->project_root, "%s", SMOKE_SOURCE_DIR);
    snprintf(c->rest_url, sizeof c->rest_url, "https://staging.band.example");
    snprintf(c->ws_url, sizeof c->ws_url, "wss://ws.band.example:8443/api/v1/socket/websocket");
    snprintf(c->sandbox, sizeof c->sandbox, NAME);
    snprintf(c->workspace, sizeof c->workspace, "%s", w->ws);
    snprintf(c->sbx_bin, sizeof c->sbx_bin, "%s", w->sbx.sbx);
    snprintf(c->sdk_spec, sizeof c->sdk_spec, "band-sdk==6.0.0");
    char err[ERR_BUFSZ];
    if (state_store_init(&w->store, w->sbx.state, NULL, err) != ERR_OK)
        abort();
    w->st = state_new(&w->store);
}

static void world_close(world *w)
{
    state_free(w->st);
    UNIT_CHECK(tk_sbx_teardown(&w->sbx) == 0, "the fake sbx left processes running");
    free(w->ws);
}

static sandbox_spec spec_of(world *w)
{
    sandbox_spec s = {&w->cfg, &w->sctx, w->st->run_id, getenv("HOME"), stderr};
    return s;
}

static err_code prepare(world *w, sandbox_outcome *o, char *err)
{
    sandbox_spec s = spec_of(w);
    return sandbox_prepare(&s, w->st, o, err);
}

static err_code teardown(world *w, sandbox_teardown_result *r, char *err)
{
    sandbox_spec s = spec_of(w);
    return sandbox_teardown(&s, w->st, r, err);
}

/* A fresh run of the same world, as after the run was archived. */
static void next_run(world *w)
{
    state_t *fresh = state_new(&w->store);
    snprintf(fresh->sandbox_name, sizeof fresh->sandbox_name, "%s", w->st->sandbox_name);
    snprintf(fresh->workspace, sizeof fresh->workspace, "%s", w->st->workspace);
    state_free(w->st);
    w->st = fresh;
}

static int listed(world *w, const char *name)
{
    sbx_sandbox sb;
    char err[ERR_BUFSZ];
    err_code rc = sbx_find(&w->sctx, name, &sb, err);
    sbx_sandbox_free(&sb);
    return rc == ERR_OK;
}

static int exists(const char *dir, const char *name)
{
    char *path = name ? tk_path(dir, name) : strdup(dir);
    struct stat sb;
    int ok = stat(path, &sb) == 0;
    free(path);
    return ok;
}

/* The resources the fake's policy allows for NAME. */
static int policy_allows(world *w, const char *resource)
{
    proc_result r;
    int found = 0;
    if (tk_sbx_run(&w->sbx, &r, "policy", "ls", "--json", NULL) == 0) {
        cJSON *root = cJSON_Parse(r.out.data);
        const cJSON *rule;
        cJSON_ArrayForEach(rule, cJSON_GetObjectItem(root, "rules")) {
            const char *scope = cJSON_GetStringValue(cJSON_GetObjectItem(rule, "scope"));
            const char *res = cJSON_GetStringValue(cJSON_GetObjectItem(rule, "resource"));
            const char *dec = cJSON_GetStringValue(cJSON_GetObjectItem(rule, "decision"));
            found |= scope && res && dec && !strcmp(scope, NAME) && !strcmp(res, resource) &&
                     !strcmp(dec, "allow");
        }
        cJSON_Delete(root);
    }
    proc_result_free(&r);
    return found;
}

static void check_payload(world *w)
{
    char *path = tk_path(w->ws, SANDBOX_AGENT);
    char *text = tk_read(path, NULL);
    UNIT_CHECK(text && strstr(text, "\n#     \"band-sdk==6.0.0\",\n") &&
                   !strstr(text, "\"band-sdk\",") && strstr(text, "\"websockets>=16\","),
               "agent.py in the workspace does not name the spec");
    free(text);
    free(path);
}

/* ---- create, reuse ---- */

static void test_create_then_reuse(void)
{
    world w;
    world_open(&w, TK_SBX_TIMEOUT_MS);
    sandbox_outcome o;
    char err[ERR_BUFSZ];
    char first_run[9];
    memcpy(first_run, w.st->run_id, sizeof first_run);
    err_code rc = prepare(&w, &o, err);
    if (!UNIT_CHECK(rc == ERR_OK, "first prepare: %s", err)) {
        world_close(&w);
        return;
    }
    UNIT_CHECK(o.created && o.marked, "created %d marked %d", o.created, o.marked);
    UNIT_CHECK(!strcmp(w.st->sandbox_created_by, first_run), "created_by '%s'",
               w.st->sandbox_created_by);
    UNIT_CHECK(!strcmp(w.st->sandbox_name, NAME) && !strcmp(w.st->workspace, w.ws),
               "name/workspace not recorded");
    UNIT_CHECK(!strcmp(w.st->sbx_version, "v0.45.1"), "sbx_version '%s'", w.st->sbx_version);
    UNIT_CHECK(!strcmp(w.st->sdk_version, "0.0.0+standin"), "sdk_version '%s'",
               w.st->sdk_version);
    UNIT_CHECK(listed(&w, NAME), "sbx does not list the sandbox");
    static const char *const hosts[] = {"staging.band.example", "ws.band.example:8443",
                                        "pypi.org", "files.pythonhosted.org", NULL};
    for (int i = 0; hosts[i]; i++)
        UNIT_CHECK(policy_allows(&w, hosts[i]), "no allow rule for %s scoped to %s", hosts[i],
                   NAME);
    sandbox_marker m;
    rc = sandbox_read_marker(w.ws, &m, err);
    UNIT_CHECK(rc == ERR_OK && !strcmp(m.sandbox, NAME) && !strcmp(m.created_by, first_run),
               "marker: rc %d sandbox '%s' created_by '%s'", rc, m.sandbox, m.created_by);
    check_payload(&w);

    next_run(&w);
    rc = prepare(&w, &o, err);
    UNIT_CHECK(rc == ERR_OK && !o.created && !strcmp(o.found_status, "running"),
               "reuse: rc %d created %d status '%s': %s", rc, o.created, o.found_status, err);
    UNIT_CHECK(!strcmp(w.st->sandbox_created_by, first_run),
               "the marker's owner was not kept: '%s'", w.st->sandbox_created_by);
    world_close(&w);
}

static void test_other_workspace_fails(void)
{
    world w;
    world_open(&w, TK_SBX_TIMEOUT_MS);
    proc_result r;
    tk_sbx_run(&w.sbx, &r, "create", "--name", NAME, "shell", w.sbx.workspace, NULL);
    proc_result_free(&r);
    sandbox_outcome o;
    char err[ERR_BUFSZ];
    err_code rc = prepare(&w, &o, err);
    UNIT_CHECK(rc == ERR_CONFIG && strstr(err, "another workspace"), "rc %d: %s", rc, err);
    UNIT_CHECK(!w.st->sandbox_created_by[0], "claimed a sandbox it did not create");
    UNIT_CHECK(!exists(w.ws, NULL), "wrote into SBX_WORKSPACE anyway");
    world_close(&w);
}

/* A sandbox someone else created on our (empty) workspace: used, marked
 * as not ours, and left by teardown with its workspace. */
static void test_reuse_not_ours(void)
{
    world w;
    world_open(&w, TK_SBX_TIMEOUT_MS);
    mkdir(w.ws, 0700);
    proc_result r;
    tk_sbx_run(&w.sbx, &r, "create", "--name", NAME, "shell", w.ws, NULL);
    proc_result_free(&r);
    sandbox_outcome o;
    char err[ERR_BUFSZ];
    err_code rc = prepare(&w, &o, err);
    UNIT_CHECK(rc == ERR_OK && !o.created && !w.st->sandbox_created_by[0],
               "rc %d created %d owner '%s': %s", rc, o.created, w.st->sandbox_created_by, err);
    sandbox_teardown_result t;
    rc = teardown(&w, &t, err);
    UNIT_CHECK(rc == ERR_OK && t.sandbox == SANDBOX_NOT_OURS && t.workspace == WORKSPACE_KEPT,
               "teardown rc %d: %d/%d %s", rc, t.sandbox, t.workspace, err);
    UNIT_CHECK(listed(&w, NAME) && exists(w.ws, SANDBOX_AGENT), "teardown removed what is not ours");
    UNIT_CHECK(strstr(t.summary, "not created by this suite") != NULL, "summary: %s", t.summary);
    world_close(&w);
}

/* ---- teardown ---- */

static void test_teardown_removes_only_ours(void)
{
    world w;
    world_open(&w, TK_SBX_TIMEOUT_MS);
    proc_result r;
    tk_sbx_run(&w.sbx, &r, "create", "--name", "bystander", "shell", w.sbx.workspace, NULL);
    proc_result_free(&r);
    sandbox_outcome o;
    sandbox_teardown_result t;
    char err[ERR_BUFSZ];
    if (!UNIT_CHECK(prepare(&w, &o, err) == ERR_OK, "prepare: %s", err)) {
        world_close(&w);
        return;
    }
    err_code rc = teardown(&w, &t, err);
    UNIT_CHECK(rc == ERR_OK && t.sandbox == SANDBOX_REMOVED && t.workspace == WORKSPACE_DELETED,
               "rc %d: %d/%d %s", rc, t.sandbox, t.workspace, err);
    UNIT_CHECK(!listed(&w, NAME) && !exists(w.ws, NULL), "the sandbox or workspace is left");
    UNIT_CHECK(listed(&w, "bystander") && exists(w.sbx.workspace, NULL),
               "teardown touched another sandbox");
    rc = teardown(&w, &t, err);
    UNIT_CHECK(rc == ERR_OK && t.sandbox == SANDBOX_WAS_GONE && t.workspace == WORKSPACE_WAS_GONE,
               "second teardown rc %d: %d/%d %s", rc, t.sandbox, t.workspace, err);
    world_close(&w);
}

static void test_teardown_refuses_unmarked(void)
{
    world w;
    world_open(&w, TK_SBX_TIMEOUT_MS);
    sandbox_outcome o;
    sandbox_teardown_result t;
    char err[ERR_BUFSZ];
    if (!UNIT_CHECK(prepare(&w, &o, err) == ERR_OK, "prepare: %s", err)) {
        world_close(&w);
        return;
    }
    char *marker = tk_path(w.ws, SANDBOX_MARKER);
    unlink(marker);
    err_code rc = teardown(&w, &t, err);
    UNIT_CHECK(rc == ERR_OK && t.sandbox == SANDBOX_REMOVED && t.workspace == WORKSPACE_NO_MARKER,
               "rc %d: %d/%d %s", rc, t.sandbox, t.workspace, err);
    UNIT_CHECK(exists(w.ws, SANDBOX_AGENT), "deleted a workspace without the marker");
    UNIT_CHECK(strstr(t.summary, "no band-smoke marker") != NULL, "summary: %s", t.summary);

    /* A marker of another sandbox does not count either. */
    tk_write(marker, "kind=band-smoke-workspace\nsandbox=someone-else\ncreated_by=\n");
    rc = teardown(&w, &t, err);
    UNIT_CHECK(rc == ERR_OK && t.workspace == WORKSPACE_NO_MARKER && exists(w.ws, SANDBOX_AGENT),
               "a marker naming another sandbox: rc %d ws %d", rc, t.workspace);
    free(marker);
    world_close(&w);
}

/* Issue 9 finding 2: a workspace that already holds someone's files (here
 * their own agent.py) and no band-smoke marker is not ours to write into:
 * preflight fails it with a clear line, and the sandbox phase refuses it
 * before it creates anything, leaving their agent.py as it was. */
static void test_foreign_workspace_refused(void)
{
    world w;
    world_open(&w, TK_SBX_TIMEOUT_MS);
    mkdir(w.ws, 0700);
    char *mine = tk_path(w.ws, "operator-notes.txt");
    char *theirs = tk_path(w.ws, SANDBOX_AGENT);
    tk_write(mine, "keep me\n");
    tk_write(theirs, "print('the operator's own agent')\n");
    preflight_input in = {&w.cfg, &w.sctx, getenv("HOME")};
    preflight_result pr;
    char err[ERR_BUFSZ];
    preflight_run(&in, &pr, err);
    int flagged = 0;
    for (int i = 0; i < pr.count; i++)
        flagged |= pr.lines[i].mark == PREFLIGHT_FAIL && strstr(pr.lines[i].text, SANDBOX_MARKER);
    UNIT_CHECK(flagged, "preflight passed a non-empty workspace without the marker");
    sandbox_outcome o;
    err_code rc = prepare(&w, &o, err);
    UNIT_CHECK(rc == ERR_CONFIG && strstr(err, SANDBOX_MARKER), "rc %d: %s", rc, err);
    char *text = tk_read(theirs, NULL);
    UNIT_CHECK(text && !strcmp(text, "print('the operator's own agent')\n"),
               "the operator's agent.py was overwritten");
    free(text);
    UNIT_CHECK(exists(mine, NULL) && !exists(w.ws, SANDBOX_MARKER), "the folder was changed");
    UNIT_CHECK(!listed(&w, NAME) && !w.st->sandbox_created_by[0],
               "a sandbox was created on a refused workspace");
    /* Emptied by its owner, the same folder is accepted and marked. */
    unlink(mine);
    unlink(theirs);
    rc = prepare(&w, &o, err);
    UNIT_CHECK(rc == ERR_OK && o.marked, "an empty folder: rc %d marked %d: %s", rc, o.marked,
               err);
    free(mine);
    free(theirs);
    world_close(&w);
}

/* A SIGKILL in the middle of the marker's write leaves only its temp
 * file (rehearsal.sigkill found it): the folder is still ours to mark,
 * while any other file keeps it refused. */
static void test_cut_marker_write_is_ours(void)
{
    world w;
    world_open(&w, TK_SBX_TIMEOUT_MS);
    mkdir(w.ws, 0700);
    char *temp = tk_path(w.ws, "." SANDBOX_MARKER ".tmp.Ab12Cd");
    tk_write(temp, "kind=band-smoke-work");
    char err[ERR_BUFSZ];
    err_code rc = sandbox_check_workspace_ours(w.ws, err);
    UNIT_CHECK(rc == ERR_OK, "a folder holding only our cut marker write: rc %d: %s", rc, err);
    sandbox_outcome o;
    rc = prepare(&w, &o, err);
    UNIT_CHECK(rc == ERR_OK && o.marked, "rc %d marked %d: %s", rc, o.marked, err);
    char *elsewhere = tk_tmpdir("ws-other");
    char *other = tk_path(elsewhere, ".other.tmp.Ab12Cd");
    tk_write(other, "not ours");
    rc = sandbox_check_workspace_ours(elsewhere, err);
    UNIT_CHECK(rc == ERR_CONFIG, "another program's temp file passed: rc %d", rc);
    tk_rmtree(elsewhere);
    free(elsewhere);
    free(other);
    free(temp);
    world_close(&w);
}

/* Issue 9 finding 10: SBX_WORKSPACE as a symlink to our marked folder.
 * Teardown deletes nothing through a link, and says what it did: not
 * "deleted" while the target keeps the marker and agent.py. */
static void test_symlinked_workspace_words(void)
{
    world w;
    world_open(&w, TK_SBX_TIMEOUT_MS);
    char *target = tk_path(w.sbx.state, "real-workspace");
    mkdir(target, 0700);
    if (symlink(target, w.ws) != 0)
        abort();
    sandbox_outcome o;
    sandbox_teardown_result t;
    char err[ERR_BUFSZ];
    if (!UNIT_CHECK(prepare(&w, &o, err) == ERR_OK, "prepare: %s", err)) {
        free(target);
        world_close(&w);
        return;
    }
    err_code rc = teardown(&w, &t, err);
    struct stat sb;
    int link_left = lstat(w.ws, &sb) == 0;
    int target_full = exists(target, SANDBOX_MARKER) && exists(target, SANDBOX_AGENT);
    int says_deleted = strstr(t.summary, "deleted") != NULL;
    UNIT_CHECK(rc == ERR_OK, "teardown: %s", err);
    UNIT_CHECK(!(says_deleted && (link_left || target_full)),
               "says '%s' but the link %s and the target %s its marker and agent.py", t.summary,
               link_left ? "is still there" : "is gone", target_full ? "keeps" : "lost");
    UNIT_CHECK(!says_deleted && strstr(t.summary, "symbolic link"), "summary: %s", t.summary);
    printf("\n    teardown of a symlinked workspace: %s\n", t.summary);
    free(target);
    world_close(&w);
}

/* ---- settings and a hung sbx ---- */

static void test_bad_settings_touch_nothing(void)
{
    static const struct {
        const char *name, *spec;
    } cases[] = {
        {"my_box", "band-sdk"},
        {"-rf", "band-sdk"},
        {NAME, "band-sdk\"; rm -rf /"},
        {NAME, "other-package==1.0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        world w;
        world_open(&w, TK_SBX_TIMEOUT_MS);
        snprintf(w.cfg.sandbox, sizeof w.cfg.sandbox, "%s", cases[i].name);
        snprintf(w.cfg.sdk_spec, sizeof w.cfg.sdk_spec, "%s", cases[i].spec);
        sandbox_outcome o;
        char err[ERR_BUFSZ];
        err_code rc = prepare(&w, &o, err);
        UNIT_CHECK(rc == ERR_CONFIG, "case %zu: rc %d: %s", i, rc, err);
        UNIT_CHECK(!listed(&w, cases[i].name) && !exists(w.ws, NULL),
                   "case %zu acted before refusing", i);
        world_close(&w);
    }
}

static void expect_timeout(world *w, const char *what)
{
    sandbox_outcome o;
    char err[ERR_BUFSZ];
    int64_t t0 = clock_mono_ms();
    err_code rc = prepare(w, &o, err);
    int64_t took = clock_mono_ms() - t0;
    UNIT_CHECK(rc == ERR_TIMEOUT && strstr(err, "did not answer within 1 s"),
               "%s: rc %d: %s", what, rc, err);
    UNIT_CHECK(took < 10000, "%s: gave up after %lld ms", what, (long long)took);
}

static void test_hung_sbx_times_out(void)
{
    world w;
    world_open(&w, 1000);
    proc_result r;
    tk_sbx_run(&w.sbx, &r, "_fault", "hang", "ls", NULL);
    proc_result_free(&r);
    expect_timeout(&w, "a wedged `sbx ls`");
    world_close(&w);

    world_open(&w, 1000);
    tk_sbx_setenv(&w.sbx, "FAKE_SBX_HANG=exec");
    expect_timeout(&w, "a hanging `sbx exec`");
    world_close(&w);
}

/* ---- the pure pieces ---- */

static void test_sdk_spec(void)
{
    static const char *const good[] = {"band-sdk", "band-sdk==6.0.0", "band-sdk>=6,<7",
                                       "band-sdk[extra]==1.2", "band-sdk~=6.1",
                                       "band-sdk @ https://example.com/band_sdk-6.0.0.whl",
                                       "band-sdk==6.*", NULL};
    static const char *const bad[] = {"", "band", "band-sdkx", "other==1", "band-sdk==1\"",
                                      "band-sdk==1'", "band-sdk==1\n", "band-sdk==1;rm",
                                      "band-sdk==$(id)", "band-sdk==`id`", "band-sdk==1\\",
                                      "band-sdk|x", "band-sdk==1 # c", NULL};
    char err[ERR_BUFSZ];
    for (int i = 0; good[i]; i++)
        UNIT_CHECK(sandbox_check_sdk_spec(good[i], err) == ERR_OK, "refused '%s'", good[i]);
    for (int i = 0; bad[i]; i++)
        UNIT_CHECK(sandbox_check_sdk_spec(bad[i], err) == ERR_CONFIG, "accepted bad #%d", i);
    char longer[SANDBOX_SDK_SPEC_MAX + 2];
    memset(longer, '0', sizeof longer);
    memcpy(longer, "band-sdk==", 10);
    longer[sizeof longer - 1] = '\0';
    UNIT_CHECK(sandbox_check_sdk_spec(longer, err) == ERR_CONFIG, "accepted an over-long spec");
}

static void test_rewrite_agent(void)
{
    char *out = NULL, err[ERR_BUFSZ];
    const char *src = "# /// script\n# dependencies = [\n#   \"band-sdk\",  \n#   \"x\",\n# ]\n";
    err_code rc = sandbox_rewrite_agent(src, "band-sdk>=6,<7", &out, err);
    UNIT_CHECK(rc == ERR_OK && out &&
                   !strcmp(out, "# /// script\n# dependencies = [\n#   \"band-sdk>=6,<7\",\n"
                                "#   \"x\",\n# ]\n"),
               "rc %d: %s", rc, out ? out : err);
    free(out);
    static const char *const corrupt[] = {
        "# dependencies = [\n#   \"websockets\",\n# ]\n",
        "#   \"band-sdk\",\n#   \"band-sdk\",\n",
        "    \"band-sdk\",\n", /* not a comment line: not the PEP 723 block */
        NULL,
    };
    for (int i = 0; corrupt[i]; i++) {
        out = NULL;
        UNIT_CHECK(sandbox_rewrite_agent(corrupt[i], "band-sdk", &out, err) == ERR_CORRUPT &&
                       !out,
                   "corrupt #%d accepted", i);
    }
    UNIT_CHECK(sandbox_rewrite_agent(src, "band-sdk\nimport os", &out, err) == ERR_CONFIG,
               "a bad spec was written");
    /* The real payload has exactly one such line. */
    char *payload = tk_read(SMOKE_SOURCE_DIR "/" SANDBOX_AGENT_SOURCE, NULL);
    out = NULL;
    UNIT_CHECK(payload && sandbox_rewrite_agent(payload, "band-sdk==6.0.0", &out, err) == ERR_OK,
               "the payload: %s", err);
    free(out);
    free(payload);
}

static void expect_allowlist(const char *rest, const char *ws, const char *const *want)
{
    config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.rest_url, sizeof cfg.rest_url, "%s", rest);
    snprintf(cfg.ws_url, sizeof cfg.ws_url, "%s", ws);
    sandbox_allowlist a;
    char err[ERR_BUFSZ];
    err_code rc = sandbox_allowlist_for(&cfg, &a, err);
    size_t n = 0;
    while (want[n])
        n++;
    int same = rc == ERR_OK && a.count == n;
    for (size_t i = 0; same && i < n; i++)
        same = !strcmp(a.host[i], want[i]);
    UNIT_CHECK(same, "%s + %s: rc %d, %zu resources, first '%s'", rest, ws, rc, a.count,
               a.count ? a.host[0] : "");
}

static void test_allowlist(void)
{
    const char *a[] = {"staging.band.example", "pypi.org", "files.pythonhosted.org", NULL};
    expect_allowlist("https://staging.band.example", "wss://staging.band.example/api/ws", a);
    expect_allowlist("HTTPS://staging.band.example:443/", "wss://staging.band.example:443/x", a);
    const char *b[] = {"127.0.0.1:8080", "pypi.org", "files.pythonhosted.org", NULL};
    expect_allowlist("http://127.0.0.1:8080", "ws://127.0.0.1:8080/api/v1/socket/websocket", b);
    const char *c[] = {"api.example", "rt.example:8443", "pypi.org", "files.pythonhosted.org",
                       NULL};
    expect_allowlist("https://api.example", "wss://rt.example:8443/socket", c);
    const char *d[] = {"[::1]:9000", "pypi.org", "files.pythonhosted.org", NULL};
    expect_allowlist("http://[::1]:9000", "ws://[::1]:9000/ws", d);
    config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.rest_url, sizeof cfg.rest_url, "not a url");
    snprintf(cfg.ws_url, sizeof cfg.ws_url, "wss://x.example");
    sandbox_allowlist al;
    char err[ERR_BUFSZ];
    UNIT_CHECK(sandbox_allowlist_for(&cfg, &al, err) == ERR_CONFIG && strstr(err, "BAND_REST_URL")
                   && !strstr(err, "not a url"),
               "a bad URL: %s", err);
}

const unit_case unit_cases[] = {
    {"sdk_spec", test_sdk_spec},
    {"rewrite_agent", test_rewrite_agent},
    {"allowlist", test_allowlist},
    {"create_then_reuse", test_create_then_reuse},
    {"other_workspace_fails", test_other_workspace_fails},
    {"reuse_not_ours", test_reuse_not_ours},
    {"teardown_removes_only_ours", test_teardown_removes_only_ours},
    {"teardown_refuses_unmarked", test_teardown_refuses_unmarked},
    {"foreign_workspace_refused", test_foreign_workspace_refused},
    {"cut_marker_write_is_ours", test_cut_marker_write_is_ours},
    {"symlinked_workspace_words", test_symlinked_workspace_words},
    {"bad_settings_touch_nothing", test_bad_settings_touch_nothing},
    {"hung_sbx_times_out", test_hung_sbx_times_out},
    {NULL, NULL},
};
