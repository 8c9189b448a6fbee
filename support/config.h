/* config: the settings, from the environment with a dotenv file as fallback.
 *
 * The environment wins over the file. The file is `.env.test` at the project
 * root, or the file named by SMOKE_ENV_FILE (the rehearsal uses that, so the
 * canary key never sits in any process environment). A set-but-empty
 * variable counts as unset, like the SDK's pydantic settings (so the file's
 * value, if any, applies).
 *
 * The file: `NAME=VALUE` lines, an optional `export ` prefix, `#` comment
 * lines, blank lines; values bare (an inline ` #` comment and trailing
 * blanks dropped), 'single-quoted' (literal) or "double-quoted" (\" and \\
 * escapes). The last assignment of a name wins. Any other line is
 * ERR_CONFIG naming the file and line number, never the line's text.
 *
 *   BAND_REST_URL (alias BAND_BASE_URL; BAND_BASE_URL wins when both are set,
 *                  in the environment or the file, as pydantic's
 *                  AliasChoices order does after load_dotenv)
 *   BAND_WS_URL, BAND_API_KEY_USER (secret), E2E_TIMEOUT (s, default 120)
 *   SBX_SANDBOX, SBX_WORKSPACE, SBX_BIN (default "sbx", found on PATH)
 *   SMOKE_STATE_DIR (default <project root>/.sandbox-smoke)
 *   SMOKE_SDK_SPEC (default "band-sdk")
 *   SMOKE_RECONNECT_WINDOW_S (default 300), SMOKE_SBX_TIMEOUT_S (default 60),
 *   SMOKE_BAND_TIMEOUT_S (default 30)
 *   SMOKE_CA_FILE (environment only, like the proxy variables): a PEM file
 *                  of CA certificates trusted for Band's https and wss
 *                  BESIDES the system store, for an operator behind a
 *                  TLS-inspecting proxy (and for the offline TLS world).
 *                  Verification is never switched off. The REST and
 *                  WebSocket clients read it when their caller names no
 *                  CA (config_ca_file_env); config_load checks it reads.
 *
 * config_load registers BAND_API_KEY_USER with redact the moment it is read
 * (a key under 8 bytes cannot be registered; it is kept, and preflight
 * reports it), and refuses one that could not be sent in an HTTP header
 * (config_check_api_key). Error texts name the variable, never its value.
 */
#ifndef SMOKE_CONFIG_H
#define SMOKE_CONFIG_H

#include <stddef.h>

#include "err.h"

#define CONFIG_URL_SZ 512
#define CONFIG_PATH_SZ 1024

typedef struct config {
    char project_root[CONFIG_PATH_SZ]; /* this checkout */
    char rest_url[CONFIG_URL_SZ];      /* "" when unset */
    char rest_url_var[16];             /* "BAND_BASE_URL" or "BAND_REST_URL":
                                          which alias it came from */
    char ws_url[CONFIG_URL_SZ];
    char api_key_user[256];            /* secret: never print */
    int e2e_timeout_s;
    int reconnect_window_s; /* SMOKE_RECONNECT_WINDOW_S (default 300): how long
                               after a logged disconnect the agent has to log
                               its reconnect before the Wi-Fi step fails */
    int sbx_timeout_s;      /* SMOKE_SBX_TIMEOUT_S (default 60): bound of one
                               ordinary sbx call (create and daemon start get
                               sbx.h's longer bound) */
    int band_timeout_s;     /* SMOKE_BAND_TIMEOUT_S (default 30, the SDK's):
                               bound of one Band REST call; 0 (a config not
                               made by config_load) means the default */
    char sandbox[128];
    char workspace[CONFIG_PATH_SZ];
    char sbx_bin[CONFIG_PATH_SZ];
    char state_dir[CONFIG_PATH_SZ];
    char sdk_spec[128];
    char env_file[CONFIG_PATH_SZ];     /* the dotenv file consulted */
    char ca_file[CONFIG_PATH_SZ];      /* SMOKE_CA_FILE, "" when unset */
    int env_file_found;
} config;

/* Reads everything; never fails on a missing optional setting (preflight
 * reports those). ERR_CONFIG for a malformed value (E2E_TIMEOUT not a
 * positive integer, an over-long value), ERR_IO for an unreadable dotenv. */
err_code config_load(config *cfg, const char *project_root, char *err);

/* SMOKE_BAND_TIMEOUT_S in milliseconds: the setting, or the default when
 * cfg did not come from config_load. */
long config_band_timeout_ms(const config *cfg);

/* An API key must travel as an HTTP header value (and as one line of an
 * env file): printable ASCII, no blank, no control byte. config_load
 * applies it to BAND_API_KEY_USER; a minted agent key deserves the same
 * before it is written or sent. ERR_CONFIG naming `name`, never the value. */
err_code config_check_api_key(const char *name, const char *value, char *err);

#define CONFIG_CA_FILE_VAR "SMOKE_CA_FILE"

/* SMOKE_CA_FILE from the environment, NULL when unset or empty. */
const char *config_ca_file_env(void);

/* The production guard of design section 6: both URLs set, neither the
 * SDK's production default, no app.band.ai host at all; compared after
 * normalising case, trailing slash and default port (443 for https/wss, 80
 * for http/ws); BAND_API_KEY_USER set. ERR_PRODUCTION when a URL points at
 * production, else ERR_CONFIG when anything is unset or malformed; the
 * message names every problem, not only the first. Re-checked by every
 * Band-touching step. */
err_code config_check_staging(const config *cfg, char *err);

/* The one judge of a Band endpoint URL, shared by the guard, the REST
 * client (band_http) and the WebSocket client (phx_url), so that what
 * preflight accepts no client refuses at probe time: http(s) for REST,
 * ws(s) for WebSocket; a plain host and a valid port (as
 * config_url_host_port); no userinfo (credentials go in
 * BAND_API_KEY_USER); for REST no ?query nor #fragment (API paths are
 * appended to the base; a WebSocket URL keeps its query, drops its
 * fragment). ERR_CONFIG naming `var` (NULL: "the Band URL")
 * and what is wrong, never quoting the URL. Production is not judged
 * here: config_check_staging does that first. */
typedef enum config_url_kind { CONFIG_URL_REST, CONFIG_URL_WS } config_url_kind;
err_code config_url_usable(const char *url, config_url_kind kind, const char *var, char *err);

/* The same checks one setting at a time, for preflight's one line per
 * setting: the REST URL (named by the alias it came from), BAND_WS_URL,
 * BAND_API_KEY_USER, in that order; each rc ERR_OK or as above. */
#define CONFIG_STAGING_SETTINGS 3
typedef struct config_check {
    const char *name; /* the setting's name (static) */
    err_code rc;
    char err[ERR_BUFSZ]; /* what is wrong, never the value */
} config_check;
void config_check_staging_each(const config *cfg, config_check out[CONFIG_STAGING_SETTINGS]);

/* One URL: 1 when production (an app.band.ai host, any scheme), 0 when not. */
int config_url_is_production(const char *url);

/* Host and port of a URL ("https://h:8443/x" -> "h", 8443; the scheme's
 * default port when none; "http://[::1]:8080" -> "::1", without brackets).
 * Schemes: http, https, ws, wss. ERR_CONFIG when it is not a URL we can
 * use; the message never quotes the URL. */
err_code config_url_host_port(const char *url, char *host, size_t host_sz,
                              int *port, char *err);

#endif
