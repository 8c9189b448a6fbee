/* The TLS world: tk_tls's throwaway CA and server certificate, the fake
 * Band serving https and wss with them, and band-smoke's clients (libcurl
 * through band_rest, libwebsockets through phoenix) trusting that CA only
 * through SMOKE_CA_FILE, added to the system store, never replacing it,
 * with verification on: without the setting the fake's certificate is
 * refused. SSL_CERT_FILE stands in for the system store (OpenSSL's
 * default verify paths read it), so "added, not replaced" can be proved
 * offline with a second fake whose CA only that store knows. */
#include "unit.h"

#include <stdlib.h>
#include <string.h>

#include "band_rest.h"
#include "config.h"
#include "phoenix.h"
#include "redact.h"
#include "tk.h"
#include "tk_band.h"
#include "tk_tls.h"

typedef struct tls_band {
    char *dir;
    tk_tls tls;
    tk_band band;
    int up;
} tls_band;

static int tls_band_start(tls_band *t)
{
    memset(t, 0, sizeof *t);
    t->dir = tk_tmpdir("tls");
    tk_band_opts o = {.tls = &t->tls};
    t->up = UNIT_CHECK(tk_tls_make(t->dir, &t->tls) == 0, "test certificates") &&
            UNIT_CHECK(tk_band_start_opts(&t->band, &o) == 0, "fake Band over TLS");
    return t->up;
}

static void tls_band_stop(tls_band *t)
{
    if (t->up)
        tk_band_stop(&t->band);
    tk_rmtree(t->dir);
    free(t->dir);
}

/* GET /api/v1/me/profile through band_rest with whatever trust the
 * environment gives. */
static err_code rest_profile(const tk_band *b, char *err)
{
    band_client *c = NULL;
    band_options o = band_options_default();
    o.timeout_ms = 5000;
    err_code rc = band_client_new(b->rest_url, b->user_key, &o, &c, err);
    band_profile p;
    if (rc == ERR_OK)
        rc = band_get_profile(c, &p, err);
    band_client_free(c);
    return rc;
}

/* Opens a wss socket (one attempt) and asks the server something. */
static err_code ws_join(const tk_band *b, char *err)
{
    phx_options o;
    phx_options_init(&o);
    o.ws_url = b->ws_url;
    o.api_key = b->user_key;
    o.max_attempts = 1;
    o.open_timeout_ms = 5000;
    phx_client *c = NULL;
    err_code rc = phx_client_new(&o, &c, err);
    if (rc == ERR_OK)
        rc = phx_connect(c, err);
    if (rc == ERR_OK)
        rc = phx_join(c, "phoenix-tls-probe", 5000, err);
    phx_client_free(c);
    /* A refused join (unknown topic) is still an answer over a verified
     * wss connection: that is all this checks. */
    return rc == ERR_PROTOCOL ? ERR_OK : rc;
}

static void test_certificates_made_once(void)
{
    char *dir = tk_tmpdir("tls-make");
    tk_tls a, b;
    CU_ASSERT_EQUAL(tk_tls_make(dir, &a), 0);
    char *first = tk_read(a.cert, NULL);
    CU_ASSERT_EQUAL(tk_tls_make(dir, &b), 0);
    char *second = tk_read(b.cert, NULL);
    UNIT_CHECK(first && second && !strcmp(first, second) && !strcmp(a.ca, b.ca),
               "a second call reuses the folder's certificates");
    CU_ASSERT_PTR_NOT_NULL(first && strstr(first, "-----BEGIN CERTIFICATE-----"));
    char *key = tk_read(a.key, NULL);
    CU_ASSERT_PTR_NOT_NULL(key && strstr(key, "PRIVATE KEY-----"));
    free(key);
    free(first);
    free(second);
    tk_rmtree(dir);
    free(dir);
}

/* Without SMOKE_CA_FILE the fake's certificate is refused; with it the
 * call goes through, verification on. */
static void check_trust(err_code (*call)(const tk_band *, char *), const char *what)
{
    tls_band t;
    if (!tls_band_start(&t))
        return tls_band_stop(&t);
    char err[ERR_BUFSZ] = "";
    unsetenv(CONFIG_CA_FILE_VAR);
    err_code rc = call(&t.band, err);
    UNIT_CHECK(rc != ERR_OK && strstr(err, "certificate"),
               "%s without SMOKE_CA_FILE: the fake's certificate must be refused: %s %s", what,
               err_str(rc), err);
    setenv(CONFIG_CA_FILE_VAR, t.tls.ca, 1);
    rc = call(&t.band, err);
    UNIT_CHECK(rc == ERR_OK, "%s with SMOKE_CA_FILE: %s %s", what, err_str(rc), err);
    unsetenv(CONFIG_CA_FILE_VAR);
    tls_band_stop(&t);
}

static void test_rest_trusts_smoke_ca_file(void)
{
    check_trust(rest_profile, "https");
}

static void test_ws_trusts_smoke_ca_file(void)
{
    check_trust(ws_join, "wss");
}

/* Two fakes, two CAs: one known to the "system store" (SSL_CERT_FILE),
 * one only to SMOKE_CA_FILE. Both must be reachable at once. */
static void test_extra_ca_adds_to_system_store(void)
{
    tls_band sys, extra;
    int ok = tls_band_start(&sys) & tls_band_start(&extra);
    if (ok) {
        char err[ERR_BUFSZ] = "";
        setenv("SSL_CERT_FILE", sys.tls.ca, 1);
        setenv(CONFIG_CA_FILE_VAR, extra.tls.ca, 1);
        err_code rc = rest_profile(&extra.band, err);
        UNIT_CHECK(rc == ERR_OK, "REST to the SMOKE_CA_FILE fake: %s %s", err_str(rc), err);
        rc = rest_profile(&sys.band, err);
        UNIT_CHECK(rc == ERR_OK, "REST to the system-store fake with SMOKE_CA_FILE set: %s %s",
                   err_str(rc), err);
        rc = ws_join(&extra.band, err);
        UNIT_CHECK(rc == ERR_OK, "wss to the SMOKE_CA_FILE fake: %s %s", err_str(rc), err);
        rc = ws_join(&sys.band, err);
        UNIT_CHECK(rc == ERR_OK, "wss to the system-store fake with SMOKE_CA_FILE set: %s %s",
                   err_str(rc), err);
        unsetenv(CONFIG_CA_FILE_VAR);
        unsetenv("SSL_CERT_FILE");
    }
    tls_band_stop(&sys);
    tls_band_stop(&extra);
}

static void test_config_checks_ca_file(void)
{
    char *dir = tk_tmpdir("tls-config");
    char *missing = tk_path(dir, "nope.pem");
    config cfg;
    char err[ERR_BUFSZ] = "";
    setenv("SMOKE_ENV_FILE", missing, 1);
    setenv(CONFIG_CA_FILE_VAR, missing, 1);
    err_code rc = config_load(&cfg, dir, err);
    UNIT_CHECK(rc == ERR_CONFIG && strstr(err, CONFIG_CA_FILE_VAR),
               "an unreadable SMOKE_CA_FILE is named: %s %s", err_str(rc), err);
    tk_tls t;
    tk_tls_make(dir, &t);
    setenv(CONFIG_CA_FILE_VAR, t.ca, 1);
    rc = config_load(&cfg, dir, err);
    UNIT_CHECK(rc == ERR_OK && !strcmp(cfg.ca_file, t.ca), "SMOKE_CA_FILE read: %s %s",
               err_str(rc), err);
    unsetenv(CONFIG_CA_FILE_VAR);
    rc = config_load(&cfg, dir, err);
    CU_ASSERT_TRUE(rc == ERR_OK && cfg.ca_file[0] == '\0');
    unsetenv("SMOKE_ENV_FILE");
    free(missing);
    tk_rmtree(dir);
    free(dir);
}

const unit_case unit_cases[] = {
    {"certificates_made_once", test_certificates_made_once},
    {"rest_trusts_smoke_ca_file", test_rest_trusts_smoke_ca_file},
    {"ws_trusts_smoke_ca_file", test_ws_trusts_smoke_ca_file},
    {"extra_ca_adds_to_system_store", test_extra_ca_adds_to_system_store},
    {"config_checks_ca_file", test_config_checks_ca_file},
    {NULL, NULL},
};
