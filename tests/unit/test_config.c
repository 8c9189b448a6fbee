/* config: environment over dotenv, the file's syntax, the alias, the
 * timeout, the production guard, URL parsing, and a canary key that never
 * reaches an error message. Every case starts from a clean environment (the
 * variables below unset) and a fresh project root, and restores both. */
#include "config.h"
#include "redact.h"
#include "tk.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

#define CANARY "canary-cfg-8c41d2a7f9"
#define STAGING_REST "https://staging.band.example"
#define STAGING_WS "wss://staging.band.example/api/v1/socket/websocket"

static const char *const vars[] = {
    "BAND_REST_URL", "BAND_BASE_URL", "BAND_WS_URL", "BAND_API_KEY_USER",
    "E2E_TIMEOUT", "SBX_SANDBOX", "SBX_WORKSPACE", "SBX_BIN",
    "SMOKE_STATE_DIR", "SMOKE_SDK_SPEC", "SMOKE_ENV_FILE",
    "SMOKE_RECONNECT_WINDOW_S", "SMOKE_SBX_TIMEOUT_S", "SMOKE_BAND_TIMEOUT_S",
};
#define NVARS (sizeof vars / sizeof vars[0])

static char *saved[NVARS];
static char *root; /* the project root of the running case */

static void begin(void)
{
    for (size_t i = 0; i < NVARS; i++) {
        const char *v = getenv(vars[i]);
        saved[i] = v ? strdup(v) : NULL;
        unsetenv(vars[i]);
    }
    redact_clear();
    root = tk_tmpdir("config");
}

static void end(void)
{
    for (size_t i = 0; i < NVARS; i++) {
        if (saved[i])
            setenv(vars[i], saved[i], 1);
        else
            unsetenv(vars[i]);
        free(saved[i]);
        saved[i] = NULL;
    }
    redact_clear();
    tk_rmtree(root);
    free(root);
    root = NULL;
}

static void write_dotenv(const char *name, const char *text)
{
    char *path = tk_path(root, name);
    tk_write(path, text);
    free(path);
}

static err_code load(config *cfg, char *err)
{
    err[0] = '\0';
    return config_load(cfg, root, err);
}

/* Loads and expects success; returns 0 (after recording why) if not. */
static int load_ok(config *cfg, int line)
{
    char err[ERR_BUFSZ];
    err_code rc = load(cfg, err);
    return unit_check(rc == ERR_OK, line, __FILE__, "config_load: %s: %s", err_str(rc), err);
}
#define LOAD_OK(cfg) load_ok((cfg), __LINE__)

static void staging(config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    strcpy(cfg->rest_url, STAGING_REST);
    strcpy(cfg->ws_url, STAGING_WS);
    strcpy(cfg->api_key_user, CANARY);
}

/* ---- loading ------------------------------------------------------------- */

static void test_defaults_without_file_or_environment(void)
{
    begin();
    config cfg;
    if (LOAD_OK(&cfg)) {
        char want[2048];
        snprintf(want, sizeof want, "%s/.env.test", root);
        CU_ASSERT_STRING_EQUAL(cfg.env_file, want);
        CU_ASSERT_EQUAL(cfg.env_file_found, 0);
        CU_ASSERT_STRING_EQUAL(cfg.project_root, root);
        CU_ASSERT_STRING_EQUAL(cfg.rest_url, "");
        CU_ASSERT_STRING_EQUAL(cfg.ws_url, "");
        CU_ASSERT_STRING_EQUAL(cfg.api_key_user, "");
        CU_ASSERT_EQUAL(cfg.e2e_timeout_s, 120);
        CU_ASSERT_STRING_EQUAL(cfg.sandbox, "");
        CU_ASSERT_STRING_EQUAL(cfg.workspace, "");
        CU_ASSERT_STRING_EQUAL(cfg.sbx_bin, "sbx");
        snprintf(want, sizeof want, "%s/.sandbox-smoke", root);
        CU_ASSERT_STRING_EQUAL(cfg.state_dir, want);
        CU_ASSERT_STRING_EQUAL(cfg.sdk_spec, "band-sdk");
    }
    char err[ERR_BUFSZ];
    CU_ASSERT_EQUAL(config_load(&cfg, NULL, err), ERR_USAGE);
    CU_ASSERT_EQUAL(config_load(&cfg, "", err), ERR_USAGE);
    end();
}

static void test_dotenv_syntax(void)
{
    begin();
    write_dotenv(".env.test",
                 "# staging settings\n"
                 "\n"
                 "   \t\n"
                 "BAND_REST_URL=https://staging.band.example   \n"
                 "export BAND_WS_URL='wss://staging.band.example/api/v1/socket/websocket'\n"
                 "  export   SBX_SANDBOX = \"smoke box\"  # the sandbox\n"
                 "SBX_WORKSPACE=/tmp/ws#1 # inline comment after a blank\n"
                 "SMOKE_SDK_SPEC=\"band-sdk \\\"==\\\" 6.0.0 \\\\ # not a comment\"\n"
                 "SBX_BIN='/opt/sbx/bin/sbx \\n literal'\r\n"
                 "UNRELATED_SETTING=whatever it is\n"
                 "E2E_TIMEOUT=30\n"
                 "E2E_TIMEOUT=45\n"
                 "SMOKE_STATE_DIR=");
    config cfg;
    if (LOAD_OK(&cfg)) {
        CU_ASSERT_EQUAL(cfg.env_file_found, 1);
        CU_ASSERT_STRING_EQUAL(cfg.rest_url, STAGING_REST);
        CU_ASSERT_STRING_EQUAL(cfg.rest_url_var, "BAND_REST_URL");
        CU_ASSERT_STRING_EQUAL(cfg.ws_url, STAGING_WS);
        CU_ASSERT_STRING_EQUAL(cfg.sandbox, "smoke box");
        CU_ASSERT_STRING_EQUAL(cfg.workspace, "/tmp/ws#1");
        CU_ASSERT_STRING_EQUAL(cfg.sdk_spec, "band-sdk \"==\" 6.0.0 \\ # not a comment");
        CU_ASSERT_STRING_EQUAL(cfg.sbx_bin, "/opt/sbx/bin/sbx \\n literal");
        CU_ASSERT_EQUAL(cfg.e2e_timeout_s, 45);
        /* an empty value in the file is unset too: the default applies */
        UNIT_CHECK(strstr(cfg.state_dir, "/.sandbox-smoke") != NULL, "state_dir %s", cfg.state_dir);
    }
    end();
}

static void test_environment_wins_and_empty_is_unset(void)
{
    begin();
    write_dotenv(".env.test",
                 "BAND_WS_URL=wss://file.example/api/v1/socket/websocket\n"
                 "SBX_SANDBOX=from-file\n"
                 "SBX_WORKSPACE=/file/ws\n"
                 "SBX_BIN=\n");
    setenv("BAND_WS_URL", STAGING_WS, 1);
    setenv("SBX_SANDBOX", "", 1); /* set but empty: the file's value applies */
    setenv("SBX_BIN", "", 1);     /* empty here and there: the default */
    setenv("SMOKE_STATE_DIR", "/env/state", 1);
    config cfg;
    if (LOAD_OK(&cfg)) {
        CU_ASSERT_STRING_EQUAL(cfg.ws_url, STAGING_WS);
        CU_ASSERT_STRING_EQUAL(cfg.sandbox, "from-file");
        CU_ASSERT_STRING_EQUAL(cfg.workspace, "/file/ws");
        CU_ASSERT_STRING_EQUAL(cfg.sbx_bin, "sbx");
        CU_ASSERT_STRING_EQUAL(cfg.state_dir, "/env/state");
    }
    end();
}

static void test_smoke_env_file_names_the_file(void)
{
    begin();
    write_dotenv(".env.test", "SBX_SANDBOX=from-default-file\n");
    write_dotenv("rehearsal.env", "SBX_SANDBOX=from-named-file\n");
    char *named = tk_path(root, "rehearsal.env");
    setenv("SMOKE_ENV_FILE", named, 1);
    config cfg;
    if (LOAD_OK(&cfg)) {
        CU_ASSERT_STRING_EQUAL(cfg.env_file, named);
        CU_ASSERT_EQUAL(cfg.env_file_found, 1);
        CU_ASSERT_STRING_EQUAL(cfg.sandbox, "from-named-file");
    }
    /* a named file that does not exist is as fine as a missing .env.test */
    setenv("SMOKE_ENV_FILE", "/nonexistent/band-smoke/x.env", 1);
    if (LOAD_OK(&cfg)) {
        CU_ASSERT_EQUAL(cfg.env_file_found, 0);
        CU_ASSERT_STRING_EQUAL(cfg.sandbox, "");
    }
    free(named);
    end();
}

static void test_base_url_alias_wins(void)
{
    begin();
    config cfg;
    setenv("BAND_REST_URL", "https://rest.example", 1);
    if (LOAD_OK(&cfg)) {
        CU_ASSERT_STRING_EQUAL(cfg.rest_url, "https://rest.example");
        CU_ASSERT_STRING_EQUAL(cfg.rest_url_var, "BAND_REST_URL");
    }
    setenv("BAND_BASE_URL", "https://base.example", 1);
    if (LOAD_OK(&cfg)) {
        CU_ASSERT_STRING_EQUAL(cfg.rest_url, "https://base.example");
        CU_ASSERT_STRING_EQUAL(cfg.rest_url_var, "BAND_BASE_URL");
    }
    /* each name resolves env-over-file first; then BASE beats REST */
    unsetenv("BAND_BASE_URL");
    write_dotenv(".env.test", "BAND_BASE_URL=https://base-in-file.example\n");
    if (LOAD_OK(&cfg))
        CU_ASSERT_STRING_EQUAL(cfg.rest_url, "https://base-in-file.example");
    setenv("BAND_BASE_URL", "", 1);
    if (LOAD_OK(&cfg))
        CU_ASSERT_STRING_EQUAL(cfg.rest_url, "https://base-in-file.example");
    write_dotenv(".env.test", "BAND_BASE_URL=\n");
    if (LOAD_OK(&cfg)) {
        CU_ASSERT_STRING_EQUAL(cfg.rest_url, "https://rest.example");
        CU_ASSERT_STRING_EQUAL(cfg.rest_url_var, "BAND_REST_URL");
    }
    end();
}

/* The suite's own bounds: their defaults are the numbers operators get;
 * each is taken in seconds and refused, by name, when it is not a count. */
static void test_suite_durations(void)
{
    begin();
    config cfg;
    char err[ERR_BUFSZ];
    if (LOAD_OK(&cfg)) {
        CU_ASSERT_EQUAL(cfg.reconnect_window_s, 300);
        CU_ASSERT_EQUAL(cfg.sbx_timeout_s, 60);
        CU_ASSERT_EQUAL(cfg.band_timeout_s, 30);
        CU_ASSERT_EQUAL(config_band_timeout_ms(&cfg), 30000);
    }
    config zeroed;
    memset(&zeroed, 0, sizeof zeroed); /* as a test or a tool builds one */
    CU_ASSERT_EQUAL(config_band_timeout_ms(&zeroed), 30000);
    setenv("SMOKE_BAND_TIMEOUT_S", "7", 1);
    write_dotenv(".env.test", "SMOKE_SBX_TIMEOUT_S=90\nSMOKE_RECONNECT_WINDOW_S=45\n");
    if (LOAD_OK(&cfg)) {
        CU_ASSERT_EQUAL(cfg.band_timeout_s, 7);
        CU_ASSERT_EQUAL(config_band_timeout_ms(&cfg), 7000);
        CU_ASSERT_EQUAL(cfg.sbx_timeout_s, 90);
        CU_ASSERT_EQUAL(cfg.reconnect_window_s, 45);
    }
    const char *names[] = {"SMOKE_BAND_TIMEOUT_S", "SMOKE_SBX_TIMEOUT_S",
                           "SMOKE_RECONNECT_WINDOW_S"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        setenv(names[i], "0", 1);
        err_code rc = load(&cfg, err);
        UNIT_CHECK(rc == ERR_CONFIG && strstr(err, names[i]), "%s=0 gave %s: %s", names[i],
                   err_str(rc), err);
        unsetenv(names[i]);
    }
    end();
}

static void test_e2e_timeout(void)
{
    begin();
    config cfg;
    char err[ERR_BUFSZ];
    setenv("E2E_TIMEOUT", "30", 1);
    if (LOAD_OK(&cfg))
        CU_ASSERT_EQUAL(cfg.e2e_timeout_s, 30);
    setenv("E2E_TIMEOUT", "2147483647", 1);
    if (LOAD_OK(&cfg))
        CU_ASSERT_EQUAL(cfg.e2e_timeout_s, 2147483647);
    setenv("E2E_TIMEOUT", "", 1);
    if (LOAD_OK(&cfg))
        CU_ASSERT_EQUAL(cfg.e2e_timeout_s, 120);
    const char *bad[] = {"abc", "0", "-1", "+5", " 5", "5s", "1.5", "2147483648",
                         "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("E2E_TIMEOUT", bad[i], 1);
        err_code rc = load(&cfg, err);
        UNIT_CHECK(rc == ERR_CONFIG, "E2E_TIMEOUT=\"%s\" gave %s", bad[i], err_str(rc));
        UNIT_CHECK(strstr(err, "E2E_TIMEOUT") != NULL, "message: %s", err);
    }
    unsetenv("E2E_TIMEOUT");
    write_dotenv(".env.test", "E2E_TIMEOUT=abc\n");
    CU_ASSERT_EQUAL(load(&cfg, err), ERR_CONFIG);
    UNIT_CHECK(strstr(err, "E2E_TIMEOUT") != NULL, "message: %s", err);
    end();
}

static void test_malformed_dotenv_names_file_and_line(void)
{
    const char *bad[] = {
        "BAND_API_KEY_USER " CANARY "\n",
        "BAND_API_KEY_USER=\"" CANARY "\n",
        "BAND_API_KEY_USER='" CANARY "' trailing\n",
        "=" CANARY "\n",
        "1BAND=" CANARY "\n",
        "export\n",
        "BAND-API-KEY-USER=" CANARY "\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        begin();
        setenv("BAND_API_KEY_USER", CANARY, 1);
        char text[256];
        snprintf(text, sizeof text, "# header\nSBX_SANDBOX=box\n%s", bad[i]);
        write_dotenv(".env.test", text);
        config cfg;
        char err[ERR_BUFSZ];
        err_code rc = load(&cfg, err);
        UNIT_CHECK(rc == ERR_CONFIG, "case %zu gave %s", i, err_str(rc));
        UNIT_CHECK(strstr(err, ".env.test line 3") != NULL, "case %zu message: %s", i, err);
        UNIT_CHECK(strstr(err, CANARY) == NULL, "case %zu leaks the key: %s", i, err);
        end();
    }
}

static void test_unreadable_and_overlong_dotenv(void)
{
    begin();
    config cfg;
    char err[ERR_BUFSZ];
    setenv("SMOKE_ENV_FILE", root, 1); /* a folder: exists, cannot be read */
    CU_ASSERT_EQUAL(load(&cfg, err), ERR_IO);
    UNIT_CHECK(strstr(err, root) != NULL, "message: %s", err);
    unsetenv("SMOKE_ENV_FILE");

    size_t n = 5000;
    char *text = malloc(n + 64);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    strcpy(text, "SBX_SANDBOX=box\nSBX_WORKSPACE=");
    size_t used = strlen(text);
    memset(text + used, 'w', n);
    strcpy(text + used + n, "\n");
    write_dotenv(".env.test", text);
    CU_ASSERT_EQUAL(load(&cfg, err), ERR_CONFIG);
    UNIT_CHECK(strstr(err, "line 2") != NULL, "message: %s", err);
    /* a line of exactly the limit is read whole: what is wrong is the value */
    strcpy(text, "SBX_SANDBOX=");
    memset(text + 12, 's', 4095 - 12);
    strcpy(text + 4095, "\n");
    write_dotenv(".env.test", text);
    CU_ASSERT_EQUAL(load(&cfg, err), ERR_CONFIG);
    UNIT_CHECK(strstr(err, "SBX_SANDBOX is longer than 127 bytes") != NULL, "message: %s", err);
    free(text);
    end();
}

static void test_overlong_values_name_the_variable(void)
{
    begin();
    config cfg;
    char err[ERR_BUFSZ];
    char big[700];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memcpy(big + 100, CANARY, strlen(CANARY));
    setenv("BAND_API_KEY_USER", big, 1);
    CU_ASSERT_EQUAL(load(&cfg, err), ERR_CONFIG);
    UNIT_CHECK(strstr(err, "BAND_API_KEY_USER is longer than 255 bytes") != NULL, "message: %s", err);
    UNIT_CHECK(strstr(err, CANARY) == NULL && strstr(err, "kkkk") == NULL, "leak: %s", err);
    unsetenv("BAND_API_KEY_USER");
    setenv("BAND_BASE_URL", big, 1);
    CU_ASSERT_EQUAL(load(&cfg, err), ERR_CONFIG);
    UNIT_CHECK(strstr(err, "BAND_BASE_URL is longer than 511 bytes") != NULL, "message: %s", err);
    end();
}

static void test_api_key_is_registered_when_read(void)
{
    begin();
    config cfg;
    write_dotenv(".env.test", "BAND_API_KEY_USER=" CANARY "\n");
    if (LOAD_OK(&cfg)) {
        CU_ASSERT_STRING_EQUAL(cfg.api_key_user, CANARY);
        CU_ASSERT_TRUE(redact_has_secret(CANARY, strlen(CANARY)));
    }
    /* from the environment too, and the file's (shadowed) key as well */
    redact_clear();
    setenv("BAND_API_KEY_USER", "env-key-0123456789", 1);
    if (LOAD_OK(&cfg)) {
        CU_ASSERT_STRING_EQUAL(cfg.api_key_user, "env-key-0123456789");
        CU_ASSERT_TRUE(redact_has_secret("env-key-0123456789", 18));
        CU_ASSERT_TRUE(redact_has_secret(CANARY, strlen(CANARY)));
    }
    /* a key that cannot be registered could be printed in clear: fatal */
    redact_clear();
    char filler[32];
    for (int i = 0; i < REDACT_MAX_SECRETS; i++) {
        snprintf(filler, sizeof filler, "filler-secret-%02d", i);
        CU_ASSERT_EQUAL(redact_add_secret(filler), ERR_OK);
    }
    char err[ERR_BUFSZ];
    CU_ASSERT_EQUAL(load(&cfg, err), ERR_FULL);
    UNIT_CHECK(strstr(err, "BAND_API_KEY_USER") != NULL && strstr(err, "env-key") == NULL,
               "message: %s", err);
    /* too short to mask: kept for preflight to judge, load still succeeds */
    redact_clear();
    setenv("BAND_API_KEY_USER", "short", 1);
    if (LOAD_OK(&cfg)) {
        CU_ASSERT_STRING_EQUAL(cfg.api_key_user, "short");
        CU_ASSERT_FALSE(redact_has_secret("short", 5));
    }
    end();
}

/* ---- the production guard ------------------------------------------------ */

static void test_production_urls_are_refused(void)
{
    const char *prod[] = {
        "https://app.band.ai",
        "HTTPS://APP.BAND.AI/",
        "https://app.band.ai:443",
        "https://app.band.ai/",
        "https://app.band.ai:8443/api/v1",
        "http://app.band.ai:80",
        "https://eu.app.band.ai",
        "https://App.Band.Ai.",
        ("https://user:" CANARY "@app.band.ai/"),
        ("https://app.band.ai?api_key=" CANARY),
        "https://app.band.ai:/",
        "app.band.ai",
        "//app.band.ai/x",
        "wss://app.band.ai/api/v1/socket/websocket",
        "wss://app.band.ai:443/api/v1/socket/websocket/",
        "WSS://App.Band.AI/api/v1/socket/websocket",
        "ws://app.band.ai",
        "ftp://app.band.ai",
    };
    for (size_t i = 0; i < sizeof prod / sizeof prod[0]; i++) {
        UNIT_CHECK(config_url_is_production(prod[i]), "%s not seen as production", prod[i]);
        config cfg;
        char err[ERR_BUFSZ];
        staging(&cfg);
        snprintf(cfg.rest_url, sizeof cfg.rest_url, "%s", prod[i]);
        err_code rc = config_check_staging(&cfg, err);
        UNIT_CHECK(rc == ERR_PRODUCTION, "REST %s gave %s", prod[i], err_str(rc));
        UNIT_CHECK(strcmp(err, "BAND_REST_URL points at production (app.band.ai); set it to "
                               "the staging REST URL before running this smoke.") == 0,
                   "message: %s", err);
        staging(&cfg);
        snprintf(cfg.ws_url, sizeof cfg.ws_url, "%s", prod[i]);
        rc = config_check_staging(&cfg, err);
        UNIT_CHECK(rc == ERR_PRODUCTION, "WS %s gave %s", prod[i], err_str(rc));
        UNIT_CHECK(strstr(err, "BAND_WS_URL points at production") != NULL &&
                       strstr(err, "staging WebSocket URL") != NULL,
                   "message: %s", err);
    }
}

static void test_production_lookalikes_are_not_production(void)
{
    const char *other[] = {
        "https://staging.band.example",
        "https://notapp.band.ai",
        "https://band.ai",
        "https://app.band.ai.staging.example",
        "https://app.band.aii",
        "https://app.band.ai@staging.band.example/",
        "https://staging.band.example/app.band.ai",
        "https://staging.band.example?host=app.band.ai",
        "",
        NULL,
    };
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
        UNIT_CHECK(!config_url_is_production(other[i]), "%s seen as production",
                   other[i] ? other[i] : "NULL");
}

static void test_staging_urls_are_accepted(void)
{
    const char *rest[] = {STAGING_REST, "http://127.0.0.1:8080", "http://[::1]:8080/",
                          "HTTPS://Staging.Band.Example:8443/base"};
    const char *ws[] = {STAGING_WS, "ws://127.0.0.1:8080/api/v1/socket/websocket",
                        "ws://[::1]:8080/api/v1/socket/websocket", "WSS://staging.band.example"};
    for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++) {
        config cfg;
        char err[ERR_BUFSZ] = "";
        staging(&cfg);
        snprintf(cfg.rest_url, sizeof cfg.rest_url, "%s", rest[i]);
        snprintf(cfg.ws_url, sizeof cfg.ws_url, "%s", ws[i]);
        err_code rc = config_check_staging(&cfg, err);
        UNIT_CHECK(rc == ERR_OK, "%s + %s refused: %s", rest[i], ws[i], err);
    }
}

static void expect_refused(const char *rest, const char *ws, const char *key,
                           err_code want, const char *message_part, int line)
{
    config cfg;
    char err[ERR_BUFSZ] = "";
    staging(&cfg);
    snprintf(cfg.rest_url, sizeof cfg.rest_url, "%s", rest);
    snprintf(cfg.ws_url, sizeof cfg.ws_url, "%s", ws);
    snprintf(cfg.api_key_user, sizeof cfg.api_key_user, "%s", key);
    err_code rc = config_check_staging(&cfg, err);
    unit_check(rc == want, line, __FILE__, "(%s, %s) gave %s (%s), want %s", rest, ws,
               err_str(rc), err, err_str(want));
    unit_check(strstr(err, message_part) != NULL, line, __FILE__, "message \"%s\" lacks \"%s\"",
               err, message_part);
    unit_check(strstr(err, CANARY) == NULL, line, __FILE__, "message leaks the key: %s", err);
}
#define REFUSED(rest, ws, key, want, part) expect_refused(rest, ws, key, want, part, __LINE__)

static void test_unset_and_unusable_urls_are_refused(void)
{
    REFUSED("", STAGING_WS, CANARY, ERR_CONFIG,
            "BAND_REST_URL is unset; set it to the staging REST URL");
    REFUSED(STAGING_REST, "", CANARY, ERR_CONFIG,
            "BAND_WS_URL is unset; set it to the staging WebSocket URL");
    REFUSED(STAGING_REST, STAGING_WS, "", ERR_CONFIG,
            "BAND_API_KEY_USER is required (the staging user key)");
    REFUSED("ws://staging.band.example", STAGING_WS, CANARY, ERR_CONFIG,
            "BAND_REST_URL must be a http:// or https:// URL");
    REFUSED(STAGING_REST, STAGING_REST, CANARY, ERR_CONFIG,
            "BAND_WS_URL must be a ws:// or wss:// URL");
    REFUSED("ftp://" CANARY ".example", STAGING_WS, CANARY, ERR_CONFIG, "BAND_REST_URL: unsupported scheme");
    REFUSED("staging.band.example", STAGING_WS, CANARY, ERR_CONFIG, "BAND_REST_URL: not a URL");
    REFUSED("https://", STAGING_WS, CANARY, ERR_CONFIG, "BAND_REST_URL: the host");
    REFUSED("https://staging.example:" CANARY, STAGING_WS, CANARY, ERR_CONFIG, "BAND_REST_URL: the port");
    REFUSED(STAGING_REST, "wss://" CANARY " .example", CANARY, ERR_CONFIG, "BAND_WS_URL: not a URL");
    REFUSED(STAGING_REST, "wss://app%2eband%2eai/x", CANARY, ERR_CONFIG, "BAND_WS_URL: the host");
    /* the message names the alias the value came from */
    config cfg;
    char err[ERR_BUFSZ];
    staging(&cfg);
    strcpy(cfg.rest_url, "https://app.band.ai");
    strcpy(cfg.rest_url_var, "BAND_BASE_URL");
    CU_ASSERT_EQUAL(config_check_staging(&cfg, err), ERR_PRODUCTION);
    UNIT_CHECK(strncmp(err, "BAND_BASE_URL points at production", 34) == 0, "message: %s", err);
}

/* ---- URL parsing ------------------------------------------------------- */

static void test_host_and_port(void)
{
    static const struct {
        const char *url, *host;
        int port;
    } good[] = {
        {"https://h:8443/x", "h", 8443},
        {"https://h", "h", 443},
        {"http://h", "h", 80},
        {"ws://h/x", "h", 80},
        {"wss://staging.band.example/api/v1/socket/websocket?vsn=2.0.0", "staging.band.example", 443},
        {"HTTP://u:p@h.example:81/", "h.example", 81},
        {"http://[::1]:8080/x", "::1", 8080},
        {"https://[2001:db8::7]", "2001:db8::7", 443},
        {"https://h#frag", "h", 443},
        {"http://127.0.0.1:65535", "127.0.0.1", 65535},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char host[64] = "", err[ERR_BUFSZ] = "";
        int port = -1;
        err_code rc = config_url_host_port(good[i].url, host, sizeof host, &port, err);
        UNIT_CHECK(rc == ERR_OK, "%s: %s", good[i].url, err);
        UNIT_CHECK(strcmp(host, good[i].host) == 0 && port == good[i].port,
                   "%s -> %s %d, want %s %d", good[i].url, host, port, good[i].host, good[i].port);
    }
    const char *bad[] = {"http://[::1", "http://[::1]x", "http://[::1]:", "http:///path",
                         "https://h:0", "https://h:65536", "https://h:99999999999",
                         "https://h:8a", "https://ho st", "https://h%2e", "https://h\\@x",
                         "mailto:x@h", "file:///etc/passwd", "h:443", "", "https://[h]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char host[64], err[ERR_BUFSZ] = "";
        int port;
        err_code rc = config_url_host_port(bad[i], host, sizeof host, &port, err);
        UNIT_CHECK(rc == ERR_CONFIG, "\"%s\" accepted (%s)", bad[i], err_str(rc));
        UNIT_CHECK(err[0] != '\0', "\"%s\": no message", bad[i]);
    }
    char tiny[4], err[ERR_BUFSZ];
    int port;
    CU_ASSERT_EQUAL(config_url_host_port("https://long.example", tiny, sizeof tiny, &port, err),
                    ERR_CONFIG);
    CU_ASSERT_EQUAL(config_url_host_port("https://abc", tiny, sizeof tiny, &port, err), ERR_OK);
    CU_ASSERT_STRING_EQUAL(tiny, "abc");
}

/* ---- no error path shows the key ------------------------------------------ */

/* Every way config_load and config_check_staging can fail, with the canary
 * key in the environment or the dotenv and inside the failing values. */
static void test_canary_never_in_error_messages(void)
{
    static const struct {
        const char *dotenv;
        const char *var, *value; /* set in the environment, NULL = none */
    } cases[] = {
        {"BAND_API_KEY_USER=" CANARY "\nE2E_TIMEOUT=" CANARY "\n", NULL, NULL},
        {"BAND_API_KEY_USER=" CANARY "\nbroken " CANARY "\n", NULL, NULL},
        {"BAND_API_KEY_USER=\"" CANARY "\n", NULL, NULL},
        {"", "E2E_TIMEOUT", CANARY},
        {"E2E_TIMEOUT=0\n", "BAND_API_KEY_USER", CANARY},
        {"BAND_API_KEY_USER=" CANARY "\nBAND_REST_URL=https://app.band.ai/?api_key=" CANARY "\n"
         "BAND_WS_URL=" STAGING_WS "\n", NULL, NULL},
        {"BAND_API_KEY_USER=" CANARY "\nBAND_REST_URL=" STAGING_REST "\n"
         "BAND_WS_URL=wss://u:" CANARY "@app.band.ai\n", NULL, NULL},
        {"BAND_REST_URL=https://" CANARY ".example:" CANARY "\nBAND_WS_URL=" STAGING_WS "\n",
         "BAND_API_KEY_USER", CANARY},
        {"BAND_REST_URL=" STAGING_REST "\nBAND_WS_URL=gopher://" CANARY "\n", "BAND_API_KEY_USER", CANARY},
        {"BAND_REST_URL=" STAGING_REST "\nBAND_WS_URL=" STAGING_REST "/?api_key=" CANARY "\n",
         "BAND_API_KEY_USER", CANARY},
        {"BAND_API_KEY_USER=" CANARY "\n", "BAND_WS_URL", STAGING_WS}, /* REST unset */
        {"BAND_API_KEY_USER=" CANARY "\nBAND_REST_URL=" STAGING_REST "\n", NULL, NULL}, /* WS unset */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        begin();
        write_dotenv(".env.test", cases[i].dotenv);
        if (cases[i].var)
            setenv(cases[i].var, cases[i].value, 1);
        config cfg;
        char err[ERR_BUFSZ] = "";
        err_code rc = load(&cfg, err);
        if (rc == ERR_OK)
            rc = config_check_staging(&cfg, err);
        UNIT_CHECK(rc != ERR_OK, "case %zu did not fail", i);
        UNIT_CHECK(err[0] != '\0', "case %zu failed without a message", i);
        UNIT_CHECK(strstr(err, CANARY) == NULL, "case %zu leaks the key: %s", i, err);
        end();
    }
}

const unit_case unit_cases[] = {
    {"defaults_without_file_or_environment", test_defaults_without_file_or_environment},
    {"dotenv_syntax", test_dotenv_syntax},
    {"environment_wins_and_empty_is_unset", test_environment_wins_and_empty_is_unset},
    {"smoke_env_file_names_the_file", test_smoke_env_file_names_the_file},
    {"base_url_alias_wins", test_base_url_alias_wins},
    {"e2e_timeout", test_e2e_timeout},
    {"suite_durations", test_suite_durations},
    {"malformed_dotenv_names_file_and_line", test_malformed_dotenv_names_file_and_line},
    {"unreadable_and_overlong_dotenv", test_unreadable_and_overlong_dotenv},
    {"overlong_values_name_the_variable", test_overlong_values_name_the_variable},
    {"api_key_is_registered_when_read", test_api_key_is_registered_when_read},
    {"production_urls_are_refused", test_production_urls_are_refused},
    {"production_lookalikes_are_not_production", test_production_lookalikes_are_not_production},
    {"staging_urls_are_accepted", test_staging_urls_are_accepted},
    {"unset_and_unusable_urls_are_refused", test_unset_and_unusable_urls_are_refused},
    {"host_and_port", test_host_and_port},
    {"canary_never_in_error_messages", test_canary_never_in_error_messages},
    {NULL, NULL},
};
