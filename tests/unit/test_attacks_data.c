/* attacks on data (issue 9, findings 3, 6, 7 and 9): hostile keys, hostile
 * files in the state folder, hostile bytes and URLs the guard and the
 * clients read differently. Each case replays one attack from
 * tests/attacks/README.md and asserts the defended outcome.
 *
 * Canary keys end in CANARY_TAIL; a leak of any form of a key (raw,
 * JSON-escaped, with its control bytes flattened, ...) shows that tail, so
 * the checks look for the tail, not for one spelling of the key. */
#include "agentlog.h"
#include "band_envelope.h"
#include "band_http.h"
#include "config.h"
#include "evidence.h"
#include "junit.h"
#include "phx_url.h"
#include "redact.h"
#include "report.h"
#include "state.h"
#include "tk.h"
#include "unit.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CANARY_TAIL "9c2e5b1d7f3a"
#define T0 1796211980123LL /* 2026-12-02T11:46:20.123Z */

/* Keys an attacker (or an unlucky generator) could hand us. */
static const char *const hostile_keys[] = {
    "cnry\"quote" CANARY_TAIL,
    "cnry\\slash" CANARY_TAIL,
    "cnry\ttab" CANARY_TAIL,
    "cnry\nnewline" CANARY_TAIL,
    "cnry'apos<&>" CANARY_TAIL,
};
#define NKEYS (sizeof hostile_keys / sizeof hostile_keys[0])

static int leaks(const char *text)
{
    return text && strstr(text, CANARY_TAIL) != NULL;
}

/* A printable copy for failure messages: controls as '?'. */
static const char *shown(const char *text, char *buf, size_t cap)
{
    size_t i = 0;
    for (; text && text[i] && i + 1 < cap; i++)
        buf[i] = (unsigned char)text[i] < 0x20 ? '?' : text[i];
    buf[i] = '\0';
    return buf;
}

/* ---- finding 3: redaction ------------------------------------------------ */

/* Band echoes the key in an error's details: the client prints the details
 * JSON-escaped (quote, backslash) and with control bytes made spaces. */
static void test_band_error_echoing_a_hostile_key_is_masked(void)
{
    for (size_t k = 0; k < NKEYS; k++) {
        redact_clear();
        CU_ASSERT_EQUAL_FATAL(redact_add_secret(hostile_keys[k]), ERR_OK);
        cJSON *body = cJSON_CreateObject();
        cJSON *e = cJSON_AddObjectToObject(body, "error");
        cJSON_AddStringToObject(e, "code", "unauthorized");
        cJSON_AddStringToObject(e, "message", hostile_keys[k]);
        cJSON *d = cJSON_AddObjectToObject(e, "details");
        cJSON_AddStringToObject(d, "api_key", hostile_keys[k]);
        char *text = cJSON_PrintUnformatted(body);
        cJSON_Delete(body);
        band_envelope env;
        char err[ERR_BUFSZ] = "", show[ERR_BUFSZ];
        band_envelope_parse(401, text, strlen(text), &env, err);
        UNIT_CHECK(!leaks(err), "key %zu leaks through a Band error: %s", k,
                   shown(err, show, sizeof show));
        band_envelope_free(&env);
        free(text);
    }
    redact_clear();
}

/* Every re-encoding the code applies to text, applied to the key first. */
static void test_re_encoded_keys_are_masked(void)
{
    static const char *const forms[] = {
        "details {\"api_key\":\"cnry\\\"quote" CANARY_TAIL "\"}",     /* JSON */
        "nested \"{\\\"k\\\":\\\"cnry\\\\\\\"quote" CANARY_TAIL "\\\"}\"", /* JSON twice */
        "xml cnry&quot;quote" CANARY_TAIL,                             /* XML */
        "md cnry\"quote" CANARY_TAIL,
        "url ?k=cnry%22quote" CANARY_TAIL,                             /* percent */
        "json cnry\\\\slash" CANARY_TAIL,
        "python repr 'cnry\\\\slash" CANARY_TAIL "'",
        "flattened cnry tab" CANARY_TAIL,                              /* tab -> space */
        "json cnry\\ttab" CANARY_TAIL,
        "flattened cnry newline" CANARY_TAIL,
        "json cnry\\nnewline" CANARY_TAIL,
        "xml cnry&apos;apos&lt;&amp;&gt;" CANARY_TAIL,
        "python cnry\\'apos<&>" CANARY_TAIL,
    };
    redact_clear();
    for (size_t k = 0; k < NKEYS; k++)
        CU_ASSERT_EQUAL_FATAL(redact_add_secret(hostile_keys[k]), ERR_OK);
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char *out = redact_str(forms[i]);
        char show[512];
        UNIT_CHECK(out && !leaks(out), "form %zu not masked: %s", i,
                   shown(out, show, sizeof show));
        UNIT_CHECK(out && strstr(out, REDACT_MASK), "form %zu: no mask in %s", i,
                   shown(out, show, sizeof show));
        free(out);
    }
    redact_clear();
}

/* A later process that never learned the minted key still masks the
 * quoted forms a Python agent logs it in. */
static void test_quoted_api_key_forms_are_masked(void)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"Settings(api_key='k-" CANARY_TAIL "', url='x')",
         "Settings(api_key='[REDACTED]', url='x')"},
        {"api_key=\"k-" CANARY_TAIL "\" next", "api_key=\"[REDACTED]\" next"},
        {"{\"api_key\": \"k-" CANARY_TAIL "\", \"x\": 1}", "{\"api_key\": \"[REDACTED]\", \"x\": 1}"},
        {"{'api_key': 'k-" CANARY_TAIL "'}", "{'api_key': '[REDACTED]'}"},
        {"{\"API_KEY\":\"k\\\"q-" CANARY_TAIL "\"}", "{\"API_KEY\":\"[REDACTED]\"}"},
        {"\"{\\\"api_key\\\": \\\"k-" CANARY_TAIL "\\\"}\"", "\"{\\\"api_key\\\": \\\"[REDACTED]\\\"}\""},
        {"{\"x-api-key\": \"k-" CANARY_TAIL "\"}", "{\"x-api-key\": [REDACTED]"},
        {"\\\"X-API-Key\\\": \\\"k-" CANARY_TAIL "\\\"", "\\\"X-API-Key\\\": [REDACTED]"},
        {"api_key: k-" CANARY_TAIL ", next", "api_key: [REDACTED], next"},
    };
    redact_clear();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = redact_str(cases[i].in);
        UNIT_CHECK(out && strcmp(out, cases[i].want) == 0, "case %zu\n  got  %s\n  want %s", i,
                   out ? out : "(null)", cases[i].want);
        free(out);
    }
}

static void unset_band_env(void)
{
    static const char *const vars[] = {"BAND_API_KEY_USER", "BAND_REST_URL", "BAND_BASE_URL",
                                       "BAND_WS_URL", "SMOKE_ENV_FILE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}

/* A key that cannot travel in an HTTP header is refused when read, naming
 * the variable and never the value: no header injection, no half-printed
 * key. Quote and backslash are legal header bytes: kept. */
static void test_config_refuses_keys_unfit_for_a_header(void)
{
    static const char *const bad[] = {
        "cnry\nX-Evil: 1" CANARY_TAIL, "cnry\ttab" CANARY_TAIL, "cnry\rcr" CANARY_TAIL,
        "cnry\x7f" "del" CANARY_TAIL, "cnry\x01" "ctl" CANARY_TAIL, "cnry sp" CANARY_TAIL,
        "cnry\xc3\xa9" "utf8" CANARY_TAIL,
    };
    static const char *const good[] = {"cnry\"quote" CANARY_TAIL, "cnry\\slash" CANARY_TAIL,
                                       "cnry-plain_ok.~+/=" CANARY_TAIL};
    char *tmp = tk_tmpdir("attacks-config");
    char *envfile = tk_path(tmp, "absent.env");
    config cfg;
    char err[ERR_BUFSZ], show[ERR_BUFSZ];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unset_band_env();
        setenv("SMOKE_ENV_FILE", envfile, 1);
        setenv("BAND_API_KEY_USER", bad[i], 1);
        err[0] = '\0';
        err_code rc = config_load(&cfg, tmp, err);
        UNIT_CHECK(rc == ERR_CONFIG, "bad key %zu accepted (rc %d)", i, (int)rc);
        UNIT_CHECK(strstr(err, "BAND_API_KEY_USER") != NULL, "bad key %zu: message %s", i,
                   shown(err, show, sizeof show));
        UNIT_CHECK(!leaks(err) && !strstr(err, "cnry"), "bad key %zu: the message quotes it: %s",
                   i, shown(err, show, sizeof show));
    }
    /* the same through the dotenv file (a tab inside single quotes) */
    unset_band_env();
    char *dotenv = tk_path(tmp, "tab.env");
    tk_write(dotenv, "BAND_API_KEY_USER='cnry\tin-file" CANARY_TAIL "'\n");
    setenv("SMOKE_ENV_FILE", dotenv, 1);
    err[0] = '\0';
    UNIT_CHECK(config_load(&cfg, tmp, err) == ERR_CONFIG, "a tab in the dotenv key was accepted");
    UNIT_CHECK(!leaks(err), "dotenv: the message quotes the key: %s", shown(err, show, sizeof show));
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        unset_band_env();
        setenv("SMOKE_ENV_FILE", envfile, 1);
        setenv("BAND_API_KEY_USER", good[i], 1);
        err_code rc = config_load(&cfg, tmp, err);
        UNIT_CHECK(rc == ERR_OK, "good key %zu refused: %s", i, err);
    }
    unset_band_env();
    redact_clear();
    free(dotenv);
    free(envfile);
    tk_rmtree(tmp);
    free(tmp);
}

/* The launcher's notes flatten line breaks: the key must be masked first,
 * or its flattened form would no longer match. */
static void test_agentlog_note_masks_before_flattening(void)
{
    redact_clear();
    CU_ASSERT_EQUAL_FATAL(redact_add_secret("cnry\nnewline" CANARY_TAIL), ERR_OK);
    char *tmp = tk_tmpdir("attacks-note");
    char *log = tk_path(tmp, "agent.log");
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    CU_ASSERT_FATAL(fd >= 0);
    char err[ERR_BUFSZ];
    CU_ASSERT_EQUAL(agentlog_note(fd, T0, "INFO", AGENTLOG_LAUNCHER,
                                  "key cnry\nnewline" CANARY_TAIL " seen", err),
                    ERR_OK);
    close(fd);
    char *text = tk_read(log, NULL), show[512];
    UNIT_CHECK(text && !leaks(text), "agent.log note leaks: %s", shown(text, show, sizeof show));
    free(text);
    free(log);
    tk_rmtree(tmp);
    free(tmp);
    redact_clear();
}

/* ---- a state folder to attack ---------------------------------------------- */

typedef struct fixture {
    char *tmp;
    char *dir;
    state_store store;
    char err[ERR_BUFSZ];
} fixture;

static int fx_open(fixture *fx)
{
    memset(fx, 0, sizeof *fx);
    fx->tmp = tk_tmpdir("attacks");
    fx->dir = tk_path(fx->tmp, ".sandbox-smoke");
    return UNIT_CHECK(state_store_init(&fx->store, fx->dir, NULL, fx->err) == ERR_OK,
                      "store_init: %s", fx->err);
}

static void fx_close(fixture *fx)
{
    tk_rmtree(fx->tmp);
    free(fx->tmp);
    free(fx->dir);
}

/* A saved state holding the canary key's escaped form in every kind of
 * text field, and the pattern forms a later process cannot know. */
static void test_state_and_reports_hold_no_form_of_a_key(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    redact_clear();
    for (size_t k = 0; k < NKEYS; k++)
        CU_ASSERT_EQUAL_FATAL(redact_add_secret(hostile_keys[k]), ERR_OK);
    state_t *st = state_new(&fx.store);
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    state_probe p = {.label = "initial", .passed = 0, .at_ms = T0, .latency_ms = -1};
    snprintf(p.detail, sizeof p.detail, "HTTP 401: {\"api_key\":\"cnry\\\"quote%s\"}", CANARY_TAIL);
    state_add_probe(st, &p);
    state_set_phase(st, "initial", RESULT_FAILED, T0, 5, "tab form cnry tab" CANARY_TAIL);
    snprintf(st->evidence.wifi.disconnect_line, sizeof st->evidence.wifi.disconnect_line,
             "2026-12-02 11:46:20,123 INFO band: Settings(api_key='unknown-%s')", CANARY_TAIL);
    state_set_residual(st, "sleep_wake", "python cnry\\'apos<&>" CANARY_TAIL);
    CU_ASSERT_EQUAL(state_save(&fx.store, st, fx.err), ERR_OK);
    char *path = tk_path(fx.dir, "state.json");
    char *json = tk_read(path, NULL);
    UNIT_CHECK(json && !leaks(json), "state.json holds a form of a key:\n%s", json ? json : "");
    static const report_phase phases[] = {{"initial", "phase.05.initial", "Initial", "initial"}};
    report_input in = {st, phases, 1, "test", T0 + 1000};
    char *md = evidence_render(&in);
    char *xml = junit_render(&in);
    UNIT_CHECK(md && !leaks(md), "evidence.md holds a form of a key");
    UNIT_CHECK(xml && !leaks(xml), "junit.xml holds a form of a key");
    free(md);
    free(xml);
    free(json);
    free(path);
    state_free(st);
    redact_clear();
    fx_close(&fx);
}

/* ---- finding 6: special files in the state folder ------------------------- */

/* Runs fn in a child; 1 when it ended by itself within timeout_ms with
 * status 0, 0 when it failed, -1 when it had to be killed (it hung). */
static int bounded(int (*fn)(void *), void *arg, int timeout_ms)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm((unsigned)(timeout_ms / 1000 + 5)); /* never outlive the test */
        _exit(fn(arg) ? 0 : 1);
    }
    if (pid < 0)
        return 0;
    struct timespec nap = {0, 20 * 1000 * 1000};
    for (int waited = 0; waited < timeout_ms; waited += 20) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 1 : 0;
        nanosleep(&nap, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

static int load_refuses(void *arg)
{
    fixture *fx = arg;
    state_t *st = NULL;
    int fd = -1;
    if (state_lock(&fx->store, 1000, &fd, fx->err) != ERR_OK)
        return 0;
    err_code rc = state_load(&fx->store, &st, fx->err);
    state_unlock(fd);
    state_free(st);
    fprintf(stderr, "  state_load: %s (%s)\n", err_str(rc), fx->err);
    return rc == ERR_CORRUPT;
}

static int lock_is_free(void *arg)
{
    fixture *fx = arg;
    int fd = -1;
    err_code rc = state_lock(&fx->store, 500, &fd, fx->err);
    state_unlock(fd);
    return rc == ERR_OK;
}

static void test_state_json_fifo_never_blocks(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    char *path = tk_path(fx.dir, "state.json");
    CU_ASSERT_EQUAL_FATAL(mkfifo(path, 0600), 0);
    int got = bounded(load_refuses, &fx, 3000);
    UNIT_CHECK(got == 1, "state_load on a FIFO %s", got < 0 ? "blocked (killed after 3 s)"
                                                            : "did not refuse it as corrupt");
    /* nobody is left holding the lock */
    UNIT_CHECK(bounded(lock_is_free, &fx, 3000) == 1, "the state lock is still held");
    free(path);
    fx_close(&fx);
}

static void test_lock_symlink_creates_nothing(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    char *lock = tk_path(fx.dir, ".lock");
    char *target = tk_path(fx.tmp, "created-by-the-lock");
    CU_ASSERT_EQUAL_FATAL(symlink(target, lock), 0);
    int fd = -1;
    err_code rc = state_lock(&fx.store, 100, &fd, fx.err);
    state_unlock(fd);
    struct stat sb;
    UNIT_CHECK(rc != ERR_OK, "state_lock followed a symlinked .lock");
    UNIT_CHECK(lstat(target, &sb) != 0, "the .lock symlink created its target");
    free(lock);
    free(target);
    fx_close(&fx);
}

typedef struct scan_job {
    const char *path;
    err_code rc;
} scan_job;

static int scan_ends(void *arg)
{
    scan_job *job = arg;
    agentlog_patterns p;
    agentlog_patterns_default(&p);
    agentlog_scan scan;
    char err[ERR_BUFSZ] = "";
    job->rc = agentlog_scan_file(job->path, 0, 0, &p, &scan, err);
    fprintf(stderr, "  agentlog_scan_file: %s (%s)\n", err_str(job->rc), err);
    return 1;
}

static void test_agent_log_to_dev_zero_ends(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    char *log = tk_path(fx.dir, "agent.log");
    CU_ASSERT_EQUAL_FATAL(symlink("/dev/zero", log), 0);
    scan_job job = {log, ERR_OK};
    int got = bounded(scan_ends, &job, 5000);
    UNIT_CHECK(got == 1, "a scan of agent.log -> /dev/zero never ended (killed after 5 s)");
    /* a huge (sparse) regular file is scanned within a bound too */
    unlink(log);
    int fd = open(log, O_WRONLY | O_CREAT, 0600);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(ftruncate(fd, (off_t)8 << 30), 0); /* 8 GiB of NUL, no disk used */
    close(fd);
    /* a liveness bound, not a speed target: the scan has its own 10 s limit */
    got = bounded(scan_ends, &job, 30000);
    UNIT_CHECK(got == 1, "a scan of an 8 GiB agent.log did not end within 30 s");
    free(log);
    fx_close(&fx);
}

/* Needs a folder owned by someone else that we can still reach: as root,
 * one we give away; otherwise "/" (root's). */
static void test_foreign_state_folder_is_refused(void)
{
    char *tmp = tk_tmpdir("attacks-owner");
    char *dir = tk_path(tmp, "foreign");
    const char *use = dir;
    if (geteuid() == 0) {
        CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0700), 0);
        CU_ASSERT_EQUAL_FATAL(chown(dir, 65534, 65534), 0);
    } else {
        use = "/";
    }
    state_store store;
    char err[ERR_BUFSZ] = "";
    err_code rc = state_store_init(&store, use, NULL, err);
    UNIT_CHECK(rc == ERR_CONFIG, "a state folder owned by another user was accepted (rc %s: %s)",
               err_str(rc), err);
    UNIT_CHECK(strstr(err, "owned by") != NULL && strstr(err, "SMOKE_STATE_DIR") != NULL,
               "unclear message: %s", err);
    free(dir);
    tk_rmtree(tmp);
    free(tmp);
}

/* ---- finding 7: state.json is always UTF-8 ---------------------------------- */

/* An independent strict check: python3's json module when there is one,
 * which refuses invalid UTF-8 when the file is opened as UTF-8. */
static int python_reads(const char *path)
{
    if (system("command -v python3 >/dev/null 2>&1") != 0)
        return -1;
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; json.load(open(sys.argv[1], encoding=\"utf-8\", "
             "errors=\"strict\"))' '%s'",
             path);
    return system(cmd) == 0;
}

static int valid_utf8(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    while (*u) {
        size_t n = *u < 0x80 ? 1 : (*u >> 5) == 6 ? 2 : (*u >> 4) == 14 ? 3 : (*u >> 3) == 30 ? 4 : 0;
        if (!n || (n == 2 && *u < 0xC2) || (n == 4 && *u > 0xF4))
            return 0;
        unsigned cp = n == 1 ? *u : *u & (0x7F >> n);
        for (size_t i = 1; i < n; i++) {
            if ((u[i] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (u[i] & 0x3F);
        }
        if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        u += n;
    }
    return 1;
}

static const char invalid_bytes[] = "bad \xff\xfe lone \x80 cut \xe2\x82 overlong \xc0\xaf "
                                    "surrogate \xed\xa0\x80 end \xf0\x9f\x98";

static void test_state_json_is_valid_utf8(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    redact_clear();
    /* an agent.log line with raw bytes, taken into the evidence the way the
     * gates take it */
    char *log = tk_path(fx.dir, "agent.log");
    char line[512];
    snprintf(line, sizeof line, "2026-12-02 11:46:21,000 INFO band: WebSocket disconnected %s\n",
             invalid_bytes);
    tk_write(log, line);
    agentlog_patterns pats;
    agentlog_patterns_default(&pats);
    agentlog_scan scan;
    CU_ASSERT_EQUAL(agentlog_scan_file(log, 0, 0, &pats, &scan, fx.err), ERR_OK);
    UNIT_CHECK(scan.disconnect.at_ms != 0, "the disconnect line was not found");
    UNIT_CHECK(valid_utf8(scan.disconnect.line), "agentlog handed over invalid UTF-8");

    state_t *st = state_new(&fx.store);
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    memcpy(st->evidence.wifi.disconnect_line, scan.disconnect.line, sizeof scan.disconnect.line);
    /* a Band error body with raw bytes, as a probe detail and a phase detail */
    state_probe p = {.label = "initial", .passed = 0, .at_ms = T0, .latency_ms = -1};
    snprintf(p.detail, sizeof p.detail, "HTTP 502: %s", invalid_bytes);
    state_add_probe(st, &p);
    state_set_phase(st, "initial", RESULT_FAILED, T0, 5, invalid_bytes);
    snprintf(st->agent_process.exit_detail, sizeof st->agent_process.exit_detail, "%s",
             invalid_bytes);
    /* a field cut in the middle of a character when it was filled */
    memset(st->sandbox_name, 'a', sizeof st->sandbox_name);
    memcpy(st->sandbox_name + sizeof st->sandbox_name - 3, "\xe2\x82\xac", 3);
    CU_ASSERT_EQUAL(state_save(&fx.store, st, fx.err), ERR_OK);
    char *path = tk_path(fx.dir, "state.json");
    char *json = tk_read(path, NULL);
    UNIT_CHECK(json && valid_utf8(json), "state.json is not valid UTF-8");
    int py = python_reads(path);
    UNIT_CHECK(py != 0, "python3's strict JSON reader refused state.json");
    UNIT_CHECK(json && strstr(json, "\xef\xbf\xbd"), "no U+FFFD where the bad bytes were");
    /* and it still loads, the replacement characters in place */
    state_t *back = NULL;
    CU_ASSERT_EQUAL(state_load(&fx.store, &back, fx.err), ERR_OK);
    state_free(back);
    free(json);
    free(path);
    free(log);
    state_free(st);
    fx_close(&fx);
}

/* ---- finding 9: the guard and the clients read URLs alike ------------------ */

typedef struct url_case {
    const char *url;
    int rest; /* 1: a REST base URL, 0: a WebSocket URL */
    int ok;   /* what all three must say */
} url_case;

static const url_case url_cases[] = {
    {"https://staging.band.test", 1, 1},
    {"https://staging.band.test/", 1, 1},
    {"HTTPS://Staging.Band.Test:8443/band/", 1, 1},
    {"http://127.0.0.1:8080", 1, 1},
    {"http://[::1]:8080/prefix", 1, 1},
    {"https://user:pass@staging.band.test", 1, 0},
    {"https://@staging.band.test", 1, 0},
    {"https://staging.band.test/x?y=1", 1, 0},
    {"https://staging.band.test/?", 1, 0},
    {"https://staging.band.test/#top", 1, 0},
    {"https://sta%67ing.band.test", 1, 0},
    {"https://staging.band.test:0", 1, 0},
    {"https://staging.band.test:99999/", 1, 0},
    {"https://staging.band.test:/", 1, 0},
    {"https://", 1, 0},
    {"https:///path", 1, 0},
    {"ftp://staging.band.test", 1, 0},
    {"wss://staging.band.test", 1, 0},
    {"https://staging.band.test\\@evil.test/", 1, 0},
    {"https://[::1/", 1, 0},
    {"wss://staging.band.test/api/v1/socket/websocket", 0, 1},
    {"WSS://Staging.Band.Test:443/socket/websocket", 0, 1},
    {"ws://127.0.0.1:4000/socket/websocket?tenant=a", 0, 1},
    {"ws://[::1]:4000/socket", 0, 1},
    {"wss://staging.band.test", 0, 1},
    {"wss://user:pass@staging.band.test/socket", 0, 0},
    {"wss://@staging.band.test/socket", 0, 0},
    {"wss://staging.band.test/socket?x=1#frag", 0, 1},
    {"wss://sta%67ing.band.test/socket", 0, 0},
    {"wss://staging.band.test:0/socket", 0, 0},
    {"wss://[::1]x:80/socket", 0, 0},
    {"wss://", 0, 0},
    {"https://staging.band.test/socket", 0, 0},
    {"wss://staging.band.test\\@evil.test/", 0, 0},
};

static int guard_accepts(const url_case *c)
{
    config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.rest_url, sizeof cfg.rest_url, "%s",
             c->rest ? c->url : "https://staging.band.test");
    snprintf(cfg.ws_url, sizeof cfg.ws_url, "%s",
             c->rest ? "wss://staging.band.test/api/v1/socket/websocket" : c->url);
    snprintf(cfg.api_key_user, sizeof cfg.api_key_user, "user-key-0123456789");
    char err[ERR_BUFSZ];
    return config_check_staging(&cfg, err) == ERR_OK;
}

static int client_accepts(const url_case *c)
{
    char err[ERR_BUFSZ];
    if (c->rest) {
        char *joined = NULL;
        err_code rc = band_http_join_url(c->url, "/api/v1/agents/me", &joined, err);
        free(joined);
        return rc == ERR_OK;
    }
    phx_endpoint ep;
    err_code rc = phx_url_build(c->url, "user-key-0123456789", NULL, &ep, err);
    phx_endpoint_clear(&ep);
    return rc == ERR_OK;
}

static void test_guard_and_clients_agree_on_urls(void)
{
    for (size_t i = 0; i < sizeof url_cases / sizeof url_cases[0]; i++) {
        const url_case *c = &url_cases[i];
        int guard = guard_accepts(c), client = client_accepts(c);
        UNIT_CHECK(guard == c->ok && client == c->ok,
                   "%s URL %s: guard %s, %s client %s (want both %s)", c->rest ? "REST" : "WS",
                   c->url, guard ? "accepts" : "refuses", c->rest ? "REST" : "WebSocket",
                   client ? "accepts" : "refuses", c->ok ? "to accept" : "to refuse");
    }
}

/* The guard's message names the variable and says why, never the URL. */
static void test_guard_names_the_variable_not_the_url(void)
{
    config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.rest_url, sizeof cfg.rest_url, "https://staging.band.test");
    snprintf(cfg.ws_url, sizeof cfg.ws_url, "wss://bob:s3cret-pw@staging.band.test/socket");
    snprintf(cfg.api_key_user, sizeof cfg.api_key_user, "user-key-0123456789");
    char err[ERR_BUFSZ] = "";
    CU_ASSERT_EQUAL(config_check_staging(&cfg, err), ERR_CONFIG);
    UNIT_CHECK(strstr(err, "BAND_WS_URL") && !strstr(err, "s3cret") && strstr(err, "user"),
               "message: %s", err);
}


/* ---- older defences the review confirmed, kept proven here ----------------- */

/* state.json as a symlink to a file of the user's: never read through,
 * never written through, the target untouched. */
static void test_symlinked_state_is_neither_read_nor_written_through(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    char *target = tk_path(fx.tmp, "precious.txt");
    char *path = tk_path(fx.dir, "state.json");
    tk_write(target, "the user's own file\n");
    CU_ASSERT_EQUAL_FATAL(symlink(target, path), 0);
    state_t *st = NULL;
    UNIT_CHECK(state_load(&fx.store, &st, fx.err) == ERR_CORRUPT, "a symlinked state.json was read");
    state_t *fresh = state_new(&fx.store);
    UNIT_CHECK(state_save(&fx.store, fresh, fx.err) != ERR_OK, "saved over a symlinked state.json");
    char *text = tk_read(target, NULL);
    UNIT_CHECK(text && strcmp(text, "the user's own file\n") == 0, "the symlink's target changed");
    struct stat sb;
    UNIT_CHECK(lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode), "the symlink itself was replaced");
    free(text);
    state_free(fresh);
    state_free(st);
    free(path);
    free(target);
    fx_close(&fx);
}

/* A giant file and a deeply nested one: refused as corrupt, no crash, and
 * left as they are. */
static void test_giant_and_nested_state_are_refused(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    char *path = tk_path(fx.dir, "state.json");
    size_t n = 2u * 1024 * 1024;
    char *big = malloc(n + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    memset(big, ' ', n);
    big[0] = '{';
    big[n - 1] = '}';
    big[n] = '\0';
    tk_write(path, big);
    state_t *st = NULL;
    UNIT_CHECK(state_load(&fx.store, &st, fx.err) == ERR_CORRUPT && strstr(fx.err, "too large"),
               "a 2 MiB state.json: %s", fx.err);
    size_t depth = 200000;
    memset(big, '[', depth);
    memset(big + depth, ']', depth);
    big[2 * depth] = '\0';
    tk_write(path, big);
    UNIT_CHECK(state_load(&fx.store, &st, fx.err) == ERR_CORRUPT, "200000 nested arrays: %s",
               fx.err);
    state_t *fresh = state_new(&fx.store);
    UNIT_CHECK(state_save(&fx.store, fresh, fx.err) == ERR_CORRUPT, "a corrupt file was replaced");
    size_t len = 0;
    char *after = tk_read(path, &len);
    UNIT_CHECK(after && len == 2 * depth && memcmp(after, big, len) == 0, "the file was changed");
    free(after);
    state_free(fresh);
    free(big);
    free(path);
    fx_close(&fx);
}

static int save_on_full_disk(void *arg)
{
    fixture *fx = arg;
    /* a file size limit stands in for a full disk: writes past it fail
     * (EFBIG) exactly where ENOSPC would */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {512, 512};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
        return 0;
    state_t *st = NULL;
    if (state_load(&fx->store, &st, fx->err) != ERR_OK)
        return 0;
    snprintf(st->residual_sleep_wake, sizeof st->residual_sleep_wake, "%0400d", 7);
    snprintf(st->residual_daemon_restart, sizeof st->residual_daemon_restart, "%0400d", 8);
    err_code rc = state_save(&fx->store, st, fx->err);
    fprintf(stderr, "  state_save on a full disk: %s (%s)\n", err_str(rc), fx->err);
    state_free(st);
    return rc == ERR_IO;
}

static void test_full_disk_keeps_the_last_good_state(void)
{
    fixture fx;
    if (!fx_open(&fx))
        return;
    state_t *st = state_new(&fx.store);
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    snprintf(st->room_id, sizeof st->room_id, "room-kept");
    CU_ASSERT_EQUAL_FATAL(state_save(&fx.store, st, fx.err), ERR_OK);
    UNIT_CHECK(bounded(save_on_full_disk, &fx, 10000) == 1, "a save on a full disk did not fail "
                                                            "cleanly with ERR_IO");
    state_t *back = NULL;
    UNIT_CHECK(state_load(&fx.store, &back, fx.err) == ERR_OK, "state after a full disk: %s",
               fx.err);
    UNIT_CHECK(back && strcmp(back->room_id, "room-kept") == 0 && back->residual_sleep_wake[0] == 0,
               "the last good state was not kept");
    DIR *d = opendir(fx.dir);
    struct dirent *e;
    int temps = 0;
    while (d && (e = readdir(d)) != NULL)
        temps += strstr(e->d_name, ".tmp.") != NULL;
    if (d)
        closedir(d);
    UNIT_CHECK(temps == 0, "%d temp files left behind", temps);
    state_free(back);
    state_free(st);
    fx_close(&fx);
}

const unit_case unit_cases[] = {
    {"band_error_echoing_a_hostile_key_is_masked", test_band_error_echoing_a_hostile_key_is_masked},
    {"re_encoded_keys_are_masked", test_re_encoded_keys_are_masked},
    {"quoted_api_key_forms_are_masked", test_quoted_api_key_forms_are_masked},
    {"config_refuses_keys_unfit_for_a_header", test_config_refuses_keys_unfit_for_a_header},
    {"agentlog_note_masks_before_flattening", test_agentlog_note_masks_before_flattening},
    {"state_and_reports_hold_no_form_of_a_key", test_state_and_reports_hold_no_form_of_a_key},
    {"state_json_fifo_never_blocks", test_state_json_fifo_never_blocks},
    {"lock_symlink_creates_nothing", test_lock_symlink_creates_nothing},
    {"agent_log_to_dev_zero_ends", test_agent_log_to_dev_zero_ends},
    {"foreign_state_folder_is_refused", test_foreign_state_folder_is_refused},
    {"state_json_is_valid_utf8", test_state_json_is_valid_utf8},
    {"guard_and_clients_agree_on_urls", test_guard_and_clients_agree_on_urls},
    {"guard_names_the_variable_not_the_url", test_guard_names_the_variable_not_the_url},
    {"symlinked_state_is_neither_read_nor_written_through",
     test_symlinked_state_is_neither_read_nor_written_through},
    {"giant_and_nested_state_are_refused", test_giant_and_nested_state_are_refused},
    {"full_disk_keeps_the_last_good_state", test_full_disk_keeps_the_last_good_state},
    {NULL, NULL},
};
