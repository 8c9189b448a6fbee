#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"
#include "url.h"

#define DOTENV_LINE_SZ 4096
#define HOST_SZ 256
#define DEFAULT_E2E_TIMEOUT_S 120 /* the E2E toolkit's own default */
/* The SDK backs off up to ~90 s between attempts once Wi-Fi is back, and
 * the operator may keep it off a few minutes: five minutes is generous. */
#define DEFAULT_RECONNECT_WINDOW_S 300
#define DEFAULT_SBX_TIMEOUT_S 60 /* one ordinary sbx call; a hung sbx is a FAIL */
#define DEFAULT_BAND_TIMEOUT_S 30 /* one REST call, as the SDK's client */

/* The settings config_load reads; the dotenv parser keeps only these. */
typedef enum setting_key {
    KEY_REST_URL,
    KEY_BASE_URL,
    KEY_WS_URL,
    KEY_API_KEY_USER,
    KEY_E2E_TIMEOUT,
    KEY_SANDBOX,
    KEY_WORKSPACE,
    KEY_SBX_BIN,
    KEY_STATE_DIR,
    KEY_SDK_SPEC,
    KEY_RECONNECT_WINDOW,
    KEY_SBX_TIMEOUT,
    KEY_BAND_TIMEOUT,
    KEY__COUNT
} setting_key;

static const char *const key_names[KEY__COUNT] = {
    [KEY_REST_URL] = "BAND_REST_URL",
    [KEY_BASE_URL] = "BAND_BASE_URL",
    [KEY_WS_URL] = "BAND_WS_URL",
    [KEY_API_KEY_USER] = "BAND_API_KEY_USER",
    [KEY_E2E_TIMEOUT] = "E2E_TIMEOUT",
    [KEY_SANDBOX] = "SBX_SANDBOX",
    [KEY_WORKSPACE] = "SBX_WORKSPACE",
    [KEY_SBX_BIN] = "SBX_BIN",
    [KEY_STATE_DIR] = "SMOKE_STATE_DIR",
    [KEY_SDK_SPEC] = "SMOKE_SDK_SPEC",
    [KEY_RECONNECT_WINDOW] = "SMOKE_RECONNECT_WINDOW_S",
    [KEY_SBX_TIMEOUT] = "SMOKE_SBX_TIMEOUT_S",
    [KEY_BAND_TIMEOUT] = "SMOKE_BAND_TIMEOUT_S",
};

/* What the dotenv file said, one malloc'd value per known key. */
typedef struct dotenv {
    char *value[KEY__COUNT];
} dotenv;

static void dotenv_free(dotenv *file)
{
    for (int k = 0; k < KEY__COUNT; k++) {
        if (file->value[k]) {
            memset(file->value[k], 0, strlen(file->value[k]));
            free(file->value[k]);
        }
        file->value[k] = NULL;
    }
}

/* A short key is still kept (preflight reports it); only a registry that
 * cannot take it is fatal, since the key could then be printed in clear. */
static err_code guard_api_key(const char *value, char *err)
{
    if (!value || !*value)
        return ERR_OK;
    err_code rc = redact_add_secret(value);
    if (rc == ERR_OK || rc == ERR_USAGE)
        return ERR_OK;
    return err_set(err, rc, "cannot register BAND_API_KEY_USER for redaction (%s)", err_str(rc));
}

/* ---- dotenv syntax ----------------------------------------------------- */

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static char *skip_blanks(char *p)
{
    while (is_blank(*p))
        p++;
    return p;
}

static int is_name_start(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static int is_name_char(char c)
{
    return is_name_start(c) || (c >= '0' && c <= '9');
}

/* 'single' is literal; "double" knows \" and \\. Only a comment may follow. */
static int parse_quoted(char *p, char **value)
{
    char quote = *p++;
    char *out = p;
    *value = p;
    for (; *p && *p != quote; p++) {
        if (quote == '"' && *p == '\\' && (p[1] == '"' || p[1] == '\\'))
            p++;
        *out++ = *p;
    }
    if (*p != quote)
        return 0;
    p = skip_blanks(p + 1);
    *out = '\0';
    return *p == '\0' || *p == '#';
}

/* Unquoted: up to an inline " #" comment, trailing blanks trimmed. */
static void parse_bare(char *p, char **value)
{
    char *end = p;
    while (*end && !(*end == '#' && end > p && is_blank(end[-1])))
        end++;
    while (end > p && is_blank(end[-1]))
        end--;
    *end = '\0';
    *value = p;
}

/* Parses one line in place: 1 with *name and *value set, 0 for a blank or
 * comment line, -1 when it is not `[export ]NAME=VALUE`. */
static int dotenv_parse_line(char *line, char **name, char **value)
{
    char *p = skip_blanks(line);
    if (*p == '\0' || *p == '#')
        return 0;
    if (strncmp(p, "export", 6) == 0 && is_blank(p[6]))
        p = skip_blanks(p + 6);
    if (!is_name_start(*p))
        return -1;
    *name = p;
    while (is_name_char(*p))
        p++;
    char *name_end = p;
    p = skip_blanks(p);
    if (*p != '=')
        return -1;
    *name_end = '\0';
    p = skip_blanks(p + 1);
    if (*p == '"' || *p == '\'')
        return parse_quoted(p, value) ? 1 : -1;
    parse_bare(p, value);
    return 1;
}

static err_code dotenv_take_line(dotenv *file, char *line, const char *path,
                                 int lineno, char *err)
{
    char *name = NULL, *value = NULL;
    int kind = dotenv_parse_line(line, &name, &value);
    if (kind < 0)
        return err_set(err, ERR_CONFIG, "%s line %d: expected NAME=VALUE", path, lineno);
    if (kind == 0)
        return ERR_OK;
    for (int k = 0; k < KEY__COUNT; k++) {
        if (strcmp(name, key_names[k]) != 0)
            continue;
        if (k == KEY_API_KEY_USER) {
            err_code rc = guard_api_key(value, err);
            if (rc != ERR_OK)
                return rc;
        }
        char *copy = strdup(value);
        if (!copy)
            return err_set(err, ERR_NOMEM, "%s line %d: out of memory", path, lineno);
        free(file->value[k]); /* the last assignment wins, as in python-dotenv */
        file->value[k] = copy;
    }
    return ERR_OK;
}

/* Reads the next line into buf, without its line ending. 1 = got one,
 * 0 = end of file, -1 = longer than buf. */
static int dotenv_next_line(FILE *fp, char *buf, size_t cap)
{
    if (!fgets(buf, (int)cap, fp))
        return 0;
    size_t len = strlen(buf);
    if (len > 0 && buf[len - 1] == '\n') {
        buf[--len] = '\0';
    } else {
        int c = getc(fp); /* a line that filled buf exactly still fits */
        if (c != EOF && c != '\n') {
            ungetc(c, fp);
            return -1;
        }
    }
    if (len > 0 && buf[len - 1] == '\r')
        buf[len - 1] = '\0';
    return 1;
}

/* A missing file is normal (*found = 0): the environment may hold it all. */
static err_code dotenv_read(const char *path, dotenv *file, int *found, char *err)
{
    *found = 0;
    FILE *fp = fopen(path, "r");
    if (!fp) {
        if (errno == ENOENT)
            return ERR_OK;
        return err_set(err, ERR_IO, "cannot open %s: %s", path, strerror(errno));
    }
    *found = 1;
    char line[DOTENV_LINE_SZ];
    err_code rc = ERR_OK;
    int got, lineno = 0;
    while (rc == ERR_OK && (got = dotenv_next_line(fp, line, sizeof line)) != 0) {
        lineno++;
        if (got < 0)
            rc = err_set(err, ERR_CONFIG, "%s line %d is longer than %d bytes", path,
                         lineno, DOTENV_LINE_SZ - 1);
        else
            rc = dotenv_take_line(file, line, path, lineno, err);
    }
    if (rc == ERR_OK && ferror(fp))
        rc = err_set(err, ERR_IO, "cannot read %s: %s", path, strerror(errno));
    fclose(fp);
    memset(line, 0, sizeof line); /* it held the key */
    return rc;
}

/* ---- settings ------------------------------------------------------------ */

/* The environment's value when set and non-empty, else the file's when
 * non-empty, else NULL: an empty value counts as unset wherever it is. */
static const char *setting(const dotenv *file, setting_key k)
{
    const char *v = getenv(key_names[k]);
    if (v && *v)
        return v;
    v = file->value[k];
    return v && *v ? v : NULL;
}

static err_code copy_value(setting_key k, const char *value, char *dst, size_t cap,
                           char *err)
{
    size_t len = strlen(value);
    if (len >= cap)
        return err_set(err, ERR_CONFIG, "%s is longer than %zu bytes", key_names[k], cap - 1);
    memcpy(dst, value, len + 1);
    return ERR_OK;
}

static err_code take(const dotenv *file, setting_key k, const char *fallback,
                     char *dst, size_t cap, char *err)
{
    const char *v = setting(file, k);
    return copy_value(k, v ? v : fallback, dst, cap, err);
}

static err_code parse_seconds(setting_key k, const char *text, int *seconds, char *err)
{
    long long n = 0;
    const char *p = text;
    for (; *p >= '0' && *p <= '9' && n <= INT_MAX; p++)
        n = n * 10 + (*p - '0');
    if (p == text || *p != '\0' || n < 1 || n > INT_MAX)
        return err_set(err, ERR_CONFIG, "%s must be a positive whole number of seconds",
                       key_names[k]);
    *seconds = (int)n;
    return ERR_OK;
}

/* BAND_BASE_URL first, then BAND_REST_URL: pydantic's AliasChoices order. */
static err_code take_rest_url(const dotenv *file, config *cfg, char *err)
{
    setting_key k = setting(file, KEY_BASE_URL) ? KEY_BASE_URL : KEY_REST_URL;
    snprintf(cfg->rest_url_var, sizeof cfg->rest_url_var, "%s", key_names[k]);
    return take(file, k, "", cfg->rest_url, sizeof cfg->rest_url, err);
}

static err_code take_all(const dotenv *file, config *cfg, char *err)
{
    char state_dir[CONFIG_PATH_SZ];
    int n = snprintf(state_dir, sizeof state_dir, "%s/.sandbox-smoke", cfg->project_root);
    if (n < 0 || (size_t)n >= sizeof state_dir)
        return err_set(err, ERR_USAGE, "project root path is too long");
    err_code rc = take_rest_url(file, cfg, err);
    if (rc == ERR_OK)
        rc = take(file, KEY_WS_URL, "", cfg->ws_url, sizeof cfg->ws_url, err);
    if (rc == ERR_OK)
        rc = take(file, KEY_API_KEY_USER, "", cfg->api_key_user, sizeof cfg->api_key_user, err);
    if (rc == ERR_OK)
        rc = take(file, KEY_SANDBOX, "", cfg->sandbox, sizeof cfg->sandbox, err);
    if (rc == ERR_OK)
        rc = take(file, KEY_WORKSPACE, "", cfg->workspace, sizeof cfg->workspace, err);
    if (rc == ERR_OK)
        rc = take(file, KEY_SBX_BIN, "sbx", cfg->sbx_bin, sizeof cfg->sbx_bin, err);
    if (rc == ERR_OK)
        rc = take(file, KEY_STATE_DIR, state_dir, cfg->state_dir, sizeof cfg->state_dir, err);
    if (rc == ERR_OK)
        rc = take(file, KEY_SDK_SPEC, "band-sdk", cfg->sdk_spec, sizeof cfg->sdk_spec, err);
    if (rc != ERR_OK)
        return rc;
    static const struct {
        setting_key key;
        size_t offset;
        int fallback;
    } durations[] = {
        {KEY_E2E_TIMEOUT, offsetof(config, e2e_timeout_s), DEFAULT_E2E_TIMEOUT_S},
        {KEY_RECONNECT_WINDOW, offsetof(config, reconnect_window_s), DEFAULT_RECONNECT_WINDOW_S},
        {KEY_SBX_TIMEOUT, offsetof(config, sbx_timeout_s), DEFAULT_SBX_TIMEOUT_S},
        {KEY_BAND_TIMEOUT, offsetof(config, band_timeout_s), DEFAULT_BAND_TIMEOUT_S},
    };
    for (size_t i = 0; rc == ERR_OK && i < sizeof durations / sizeof durations[0]; i++) {
        int *seconds = (int *)((char *)cfg + durations[i].offset);
        const char *text = setting(file, durations[i].key);
        *seconds = durations[i].fallback;
        if (text)
            rc = parse_seconds(durations[i].key, text, seconds, err);
    }
    return rc;
}

long config_band_timeout_ms(const config *cfg)
{
    int s = cfg->band_timeout_s > 0 ? cfg->band_timeout_s : DEFAULT_BAND_TIMEOUT_S;
    return s * 1000L;
}

/* A key travels as an HTTP header value: a line break there would inject
 * headers, a tab or blank is trimmed or folded by some peer, and a
 * non-ASCII byte is read differently by each. Printable ASCII only, so
 * the key the server sees is the one we registered for redaction. */
err_code config_check_api_key(const char *name, const char *value, char *err)
{
    for (const unsigned char *p = (const unsigned char *)(value ? value : ""); *p; p++)
        if (*p <= ' ' || *p >= 0x7f)
            return err_set(err, ERR_CONFIG,
                           "%s holds a space, a control character or a non-ASCII byte; "
                           "an API key is printable ASCII (it is sent in an HTTP header)",
                           name ? name : "the API key");
    return ERR_OK;
}

const char *config_ca_file_env(void)
{
    const char *v = getenv(CONFIG_CA_FILE_VAR);
    return v && *v ? v : NULL;
}

/* An unreadable extra CA would fail every TLS call later with a vaguer
 * message; say it now. The path is no secret, but names stay the rule. */
static err_code take_ca_file(config *cfg, char *err)
{
    const char *v = config_ca_file_env();
    if (!v)
        return ERR_OK;
    if (strlen(v) >= sizeof cfg->ca_file)
        return err_set(err, ERR_CONFIG, CONFIG_CA_FILE_VAR " is longer than %zu bytes",
                       sizeof cfg->ca_file - 1);
    FILE *fp = fopen(v, "r");
    if (!fp)
        return err_set(err, ERR_CONFIG, CONFIG_CA_FILE_VAR " names a file that cannot be read: %s",
                       strerror(errno));
    fclose(fp);
    strcpy(cfg->ca_file, v);
    return ERR_OK;
}

static err_code choose_env_file(config *cfg, char *err)
{
    const char *named = getenv("SMOKE_ENV_FILE");
    int n = named && *named
                ? snprintf(cfg->env_file, sizeof cfg->env_file, "%s", named)
                : snprintf(cfg->env_file, sizeof cfg->env_file, "%s/.env.test", cfg->project_root);
    if (n < 0 || (size_t)n >= sizeof cfg->env_file)
        return err_set(err, ERR_CONFIG, "%s is longer than %zu bytes",
                       named && *named ? "SMOKE_ENV_FILE" : "the dotenv path",
                       sizeof cfg->env_file - 1);
    return ERR_OK;
}

err_code config_load(config *cfg, const char *project_root, char *err)
{
    if (!cfg || !project_root || !*project_root)
        return err_set(err, ERR_USAGE, "config_load: no project root");
    memset(cfg, 0, sizeof *cfg);
    if (strlen(project_root) >= sizeof cfg->project_root)
        return err_set(err, ERR_USAGE, "project root path is too long");
    strcpy(cfg->project_root, project_root);

    err_code rc = guard_api_key(getenv(key_names[KEY_API_KEY_USER]), err);
    if (rc == ERR_OK)
        rc = choose_env_file(cfg, err);
    if (rc != ERR_OK)
        return rc;
    dotenv file = {{NULL}};
    rc = dotenv_read(cfg->env_file, &file, &cfg->env_file_found, err);
    if (rc == ERR_OK)
        rc = take_all(&file, cfg, err);
    if (rc == ERR_OK)
        rc = config_check_api_key(key_names[KEY_API_KEY_USER], cfg->api_key_user, err);
    dotenv_free(&file);
    if (rc == ERR_OK)
        rc = take_ca_file(cfg, err);
    return rc;
}

/* ---- URLs ---------------------------------------------------------------- */

/* A URL cut into its parts, each pointing into the URL itself. */
typedef struct url_parts {
    const char *scheme;
    size_t scheme_len; /* 0 when there is no "scheme://" */
    const char *host;  /* without IPv6 brackets */
    size_t host_len;
    const char *port; /* digits after ':', NULL when none */
    size_t port_len;
    int bracketed;
    int malformed_host; /* '[' without ']', or text between ']' and ':' */
} url_parts;

/* Where the authority starts: after "scheme://", after a bare "//", or at
 * the very start of a URL written without a scheme. */
static const char *skip_scheme(const char *url, url_parts *u)
{
    static const char scheme_chars[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-";
    size_t len = strspn(url, scheme_chars);
    if (len > 0 && strncmp(url + len, "://", 3) == 0) {
        u->scheme = url;
        u->scheme_len = len;
        return url + len + 3;
    }
    return strncmp(url, "//", 2) == 0 ? url + 2 : url;
}

/* host[:port] or [v6]:port, from `host` up to `end`. */
static void split_host_port(const char *host, const char *end, url_parts *u)
{
    const char *after;
    if (*host == '[') {
        const char *close = memchr(host, ']', (size_t)(end - host));
        u->bracketed = 1;
        u->host = host + 1;
        after = close ? close + 1 : end;
        u->host_len = (size_t)((close ? close : end) - u->host);
        u->malformed_host = !close || (after < end && *after != ':');
    } else {
        const char *colon = memchr(host, ':', (size_t)(end - host));
        after = colon ? colon : end;
        u->host = host;
        u->host_len = (size_t)(after - host);
    }
    if (after < end && *after == ':') {
        u->port = after + 1;
        u->port_len = (size_t)(end - u->port);
    }
}

/* Cuts without judging: config_url_is_production must find the host even in
 * a URL too odd to use, so a typo cannot hide production. */
static void url_split(const char *url, url_parts *u)
{
    memset(u, 0, sizeof *u);
    const char *auth = skip_scheme(url, u);
    const char *auth_end = auth + strcspn(auth, "/?#");
    const char *host = auth;
    for (const char *p = auth; p < auth_end; p++)
        if (*p == '@')
            host = p + 1; /* the last '@' ends the userinfo */
    split_host_port(host, auth_end, u);
}

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static int equals_ci(const char *a, size_t a_len, const char *b)
{
    if (a_len != strlen(b))
        return 0;
    for (size_t i = 0; i < a_len; i++)
        if (lower(a[i]) != b[i])
            return 0;
    return 1;
}

/* Any host in app.band.ai covers the SDK defaults (https://app.band.ai,
 * wss://app.band.ai/api/v1/socket/websocket) in every spelling: case,
 * port, path and trailing slash cannot move a URL off that host. */
int config_url_is_production(const char *url)
{
    static const char prod[] = "app.band.ai";
    const size_t prod_len = sizeof prod - 1;
    if (!url)
        return 0;
    url_parts u;
    url_split(url, &u);
    size_t len = u.host_len;
    while (len > 0 && u.host[len - 1] == '.')
        len--; /* "app.band.ai." is the same host, fully qualified */
    if (len < prod_len)
        return 0;
    const char *tail = u.host + len - prod_len;
    if (!equals_ci(tail, prod_len, prod))
        return 0;
    return len == prod_len || tail[-1] == '.';
}

static int default_port(const url_parts *u)
{
    if (equals_ci(u->scheme, u->scheme_len, "https") || equals_ci(u->scheme, u->scheme_len, "wss"))
        return 443;
    if (equals_ci(u->scheme, u->scheme_len, "http") || equals_ci(u->scheme, u->scheme_len, "ws"))
        return 80;
    return 0;
}

/* Hostnames are plain ASCII labels; anything else (percent escapes,
 * backslashes, non-ASCII) is refused rather than guessed at, since another
 * parser could read it as a different host. */
static int host_is_plain(const url_parts *u)
{
    if (u->host_len == 0 || u->malformed_host)
        return 0;
    for (size_t i = 0; i < u->host_len; i++) {
        char c = u->host[i];
        int ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
                 (u->bracketed ? c == ':' || c == '.'
                               : (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                     c == '-' || c == '.' || c == '_');
        if (!ok)
            return 0;
    }
    return 1;
}

static int parse_port(const url_parts *u, int *port)
{
    if (!u->port) {
        *port = default_port(u);
        return 1;
    }
    return url_parse_port(u->port, u->port_len, port) == 0;
}

/* Blanks and controls never belong in a URL; a backslash is read as a
 * slash by browsers and as a plain byte by others, so it could make two
 * parsers see two different hosts. */
static int has_forbidden_byte(const char *url)
{
    for (const unsigned char *p = (const unsigned char *)url; *p; p++)
        if (*p <= ' ' || *p == 0x7f || *p == '\\')
            return 1;
    return 0;
}

err_code config_url_host_port(const char *url, char *host, size_t host_sz,
                              int *port, char *err)
{
    if (!url || !host || host_sz == 0 || !port)
        return err_set(err, ERR_USAGE, "config_url_host_port: missing argument");
    url_parts u;
    url_split(url, &u);
    if (u.scheme_len == 0 || has_forbidden_byte(url))
        return err_set(err, ERR_CONFIG, "not a URL (expected scheme://host[:port][/path])");
    if (default_port(&u) == 0)
        return err_set(err, ERR_CONFIG, "unsupported scheme (expected http, https, ws or wss)");
    if (!host_is_plain(&u))
        return err_set(err, ERR_CONFIG, "the host is missing or not a plain host name or address");
    if (!parse_port(&u, port))
        return err_set(err, ERR_CONFIG, "the port is not a number from 1 to 65535");
    if (u.host_len >= host_sz)
        return err_set(err, ERR_CONFIG, "the host is longer than %zu bytes", host_sz - 1);
    memcpy(host, u.host, u.host_len);
    host[u.host_len] = '\0';
    return ERR_OK;
}

static int scheme_is(const char *url, const char *a, const char *b)
{
    url_parts u;
    url_split(url, &u);
    return equals_ci(u.scheme, u.scheme_len, a) || equals_ci(u.scheme, u.scheme_len, b);
}

/* What the clients cannot carry: userinfo (the WebSocket client has
 * nowhere to send it and the REST one would send it as Basic auth; a
 * credential belongs in BAND_API_KEY_USER), and for REST a query or a
 * fragment (API paths are appended to the base). A WebSocket URL keeps
 * its query parameters and drops its fragment (phx_url.h). */
static err_code check_url_extras(const char *url, config_url_kind kind, char *err)
{
    url_parts u;
    const char *auth = skip_scheme(url, &u);
    size_t auth_len = strcspn(auth, "/?#");
    if (memchr(auth, '@', auth_len))
        return err_set(err, ERR_CONFIG, "holds a user name or password (user@host); put "
                                        "no credentials in a URL, the key goes in "
                                        "BAND_API_KEY_USER");
    if (kind == CONFIG_URL_REST && strpbrk(url, "?#"))
        return err_set(err, ERR_CONFIG, "has a ?query or #fragment; a REST base URL is "
                                        "scheme://host[:port][/prefix] (API paths are "
                                        "appended to it)");
    return ERR_OK;
}

err_code config_url_usable(const char *url, config_url_kind kind, const char *var, char *err)
{
    if (!url)
        return err_set(err, ERR_USAGE, "config_url_usable: no URL");
    const char *name = var ? var : "the Band URL";
    int rest = kind == CONFIG_URL_REST;
    char host[HOST_SZ];
    int port;
    err_code rc = config_url_host_port(url, host, sizeof host, &port, err);
    if (rc == ERR_OK && !scheme_is(url, rest ? "http" : "ws", rest ? "https" : "wss"))
        return err_set(err, ERR_CONFIG, "%s must be a %s:// URL", name,
                       rest ? "http:// or https" : "ws:// or wss");
    if (rc == ERR_OK)
        rc = check_url_extras(url, kind, err);
    return rc == ERR_OK ? ERR_OK : err_wrap(err, rc, "%s", name);
}

/* Unset, production, unusable, wrong kind: in that order, so the most
 * important problem is the one named. Messages never quote the URL: it may
 * carry userinfo or an api_key query. */
static err_code check_endpoint(const char *var, const char *url, const char *kind,
                               const char *scheme_a, const char *scheme_b, char *err)
{
    if (!url[0])
        return err_set(err, ERR_CONFIG, "%s is unset; set it to the staging %s URL", var, kind);
    if (config_url_is_production(url))
        return err_set(err, ERR_PRODUCTION,
                       "%s points at production (app.band.ai); set it to the staging %s URL "
                       "before running this smoke.", var, kind);
    /* the clients' own judge, so preflight refuses what a client would
     * refuse at probe time (scheme_b is scheme_a's TLS twin) */
    (void)scheme_b;
    return config_url_usable(url, strcmp(scheme_a, "http") == 0 ? CONFIG_URL_REST : CONFIG_URL_WS,
                             var, err);
}

void config_check_staging_each(const config *cfg, config_check out[CONFIG_STAGING_SETTINGS])
{
    const char *rest_var = cfg->rest_url_var[0] ? cfg->rest_url_var : "BAND_REST_URL";
    for (int i = 0; i < CONFIG_STAGING_SETTINGS; i++)
        out[i].err[0] = '\0';
    out[0].name = rest_var;
    out[0].rc = check_endpoint(rest_var, cfg->rest_url, "REST", "http", "https", out[0].err);
    out[1].name = "BAND_WS_URL";
    out[1].rc = check_endpoint("BAND_WS_URL", cfg->ws_url, "WebSocket", "ws", "wss",
                               out[1].err);
    out[2].name = "BAND_API_KEY_USER";
    out[2].rc = cfg->api_key_user[0]
                    ? err_set(out[2].err, ERR_OK, "BAND_API_KEY_USER is set")
                    : err_set(out[2].err, ERR_CONFIG,
                              "BAND_API_KEY_USER is required (the staging user key)");
}

/* Every problem at once, production first: the most important code wins
 * and the message names them all, so no second run finds a new one. */
err_code config_check_staging(const config *cfg, char *err)
{
    if (!cfg)
        return err_set(err, ERR_USAGE, "config_check_staging: no config");
    config_check each[CONFIG_STAGING_SETTINGS];
    config_check_staging_each(cfg, each);
    err_code worst = ERR_OK;
    char all[ERR_BUFSZ] = "";
    size_t n = 0;
    for (int i = 0; i < CONFIG_STAGING_SETTINGS; i++) {
        if (each[i].rc == ERR_OK)
            continue;
        if (worst != ERR_PRODUCTION)
            worst = each[i].rc;
        int k = snprintf(all + n, sizeof all - n, "%s%s", n ? "; " : "", each[i].err);
        n = k < 0 ? n : (size_t)k >= sizeof all - n ? sizeof all - 1 : n + (size_t)k;
    }
    return worst == ERR_OK ? ERR_OK : err_set(err, worst, "%s", all);
}
