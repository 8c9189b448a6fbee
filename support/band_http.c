#include "band_http.h"

#include <curl/curl.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "clock.h"
#include "config.h"
#include "netenv.h"
#include "progress.h"
#include "redact.h"

#ifndef SMOKE_VERSION
#define SMOKE_VERSION "dev"
#endif

struct band_http {
    CURL *curl;
    char *base;                  /* trailing slashes dropped */
    char *ca_file;               /* extra CA PEM added to the system store, or NULL */
    struct curl_slist *headers;  /* holds the key: wiped before it is freed */
    long connect_timeout_ms;
    char curl_err[CURL_ERROR_SIZE];
    char *body;                  /* last response body, NUL-terminated */
    size_t len, cap;
    int too_big;                 /* the body went over BAND_HTTP_MAX_BODY */
};

/* ---- URLs ------------------------------------------------------------- */

static int bad_url_char(unsigned char c)
{
    return c <= ' ' || c == 0x7f;
}

static size_t scheme_len(const char *url)
{
    if (strncasecmp(url, "https://", 8) == 0)
        return 8;
    if (strncasecmp(url, "http://", 7) == 0)
        return 7;
    return 0;
}

static err_code bad_base(char *err)
{
    return err_set(err, ERR_CONFIG, "the Band base URL must be http(s)://host[/prefix] with "
                                    "no query, fragment or spaces");
}

/* Length of the usable base (without trailing slashes), 0 when unusable. */
static size_t base_len(const char *base)
{
    size_t skip = scheme_len(base);
    if (!skip || base[skip] == '\0' || strchr("/?#:", base[skip]))
        return 0; /* no host */
    size_t n = 0;
    for (; base[n]; n++)
        if (bad_url_char((unsigned char)base[n]) || base[n] == '?' || base[n] == '#')
            return 0;
    while (n > skip && base[n - 1] == '/')
        n--;
    return n;
}

err_code band_http_join_url(const char *base, const char *path, char **out,
                            char *err)
{
    if (!base || !path || !out)
        return err_set(err, ERR_USAGE, "band_http_join_url: missing argument");
    *out = NULL;
    /* the guard's own judge, so preflight and this client agree */
    if (config_url_usable(base, CONFIG_URL_REST, "the Band base URL", err) != ERR_OK)
        return ERR_CONFIG;
    size_t blen = base_len(base);
    if (!blen)
        return bad_base(err);
    if (path[0] != '/')
        return err_set(err, ERR_USAGE, "API path must start with '/'");
    for (const char *p = path; *p; p++)
        if (bad_url_char((unsigned char)*p))
            return err_set(err, ERR_USAGE, "API path holds a space or control byte");
    size_t plen = strlen(path);
    char *url = malloc(blen + plen + 1);
    if (!url)
        return err_set(err, ERR_NOMEM, "out of memory joining a URL");
    memcpy(url, base, blen);
    memcpy(url + blen, path, plen + 1);
    *out = url;
    return ERR_OK;
}

int band_http_add_query(char *path, size_t cap, const char *key, const char *value)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t at = strlen(path);
    int n = snprintf(path + at, cap - at, "%c%s=", strchr(path, '?') ? '&' : '?', key);
    if (n < 0 || (size_t)n >= cap - at)
        return 0;
    at += (size_t)n;
    for (const unsigned char *v = (const unsigned char *)value; *v; v++) {
        int plain = (*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z') ||
                    (*v >= '0' && *v <= '9') || strchr("-._~", *v);
        if (at + (plain ? 1 : 3) >= cap) {
            path[at] = '\0';
            return 0;
        }
        if (plain) {
            path[at++] = (char)*v;
        } else {
            path[at++] = '%';
            path[at++] = hex[*v >> 4];
            path[at++] = hex[*v & 15];
        }
    }
    path[at] = '\0';
    return 1;
}

/* ---- the response body -------------------------------------------------- */

static void wipe_body(band_http *h)
{
    if (h->body) {
        OPENSSL_cleanse(h->body, h->len);
        h->body[0] = '\0';
    }
    h->len = 0;
    h->too_big = 0;
}

/* Grows by moving rather than realloc so no copy of a key is left behind
 * in freed memory. */
static int body_reserve(band_http *h, size_t need)
{
    if (need <= h->cap)
        return 1;
    size_t cap = h->cap ? h->cap : 4096;
    while (cap < need)
        cap *= 2;
    char *grown = malloc(cap);
    if (!grown)
        return 0;
    if (h->body) {
        memcpy(grown, h->body, h->len + 1);
        OPENSSL_cleanse(h->body, h->cap);
        free(h->body);
    }
    h->body = grown;
    h->cap = cap;
    return 1;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    band_http *h = ud;
    size_t add = size * n;
    if (add > (size_t)BAND_HTTP_MAX_BODY - h->len) {
        h->too_big = 1;
        return 0; /* curl answers CURLE_WRITE_ERROR */
    }
    if (!body_reserve(h, h->len + add + 1))
        return 0;
    memcpy(h->body + h->len, data, add);
    h->len += add;
    h->body[h->len] = '\0';
    return add;
}

/* ---- the trace ------------------------------------------------------------ */

/* Length of the header name when `line` is a header whose value
 * authenticates, else 0. */
static size_t secret_header(const char *line, size_t len)
{
    static const char *const names[] = {
        "x-api-key", "authorization", "proxy-authorization", "cookie", "set-cookie",
    };
    const char *colon = memchr(line, ':', len);
    if (!colon)
        return 0;
    size_t n = (size_t)(colon - line);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == n && strncasecmp(line, names[i], n) == 0)
            return n;
    return 0;
}

static void trace_line(FILE *fp, const char *prefix, const char *line, size_t len,
                       int is_header)
{
    size_t name = is_header ? secret_header(line, len) : 0;
    if (name)
        redact_fprintf(fp, "%s%.*s: %s\n", prefix, (int)name, line, REDACT_MASK);
    else
        redact_fprintf(fp, "%s%.*s\n", prefix, (int)len, line);
}

static int on_trace(CURL *curl, curl_infotype type, char *data, size_t size, void *ud)
{
    (void)curl;
    const char *prefix = type == CURLINFO_TEXT         ? "* "
                         : type == CURLINFO_HEADER_OUT ? "> "
                         : type == CURLINFO_HEADER_IN  ? "< "
                                                       : NULL;
    if (!prefix)
        return 0; /* bodies and TLS records never reach the trace */
    while (size > 0) {
        const char *nl = memchr(data, '\n', size);
        size_t line = nl ? (size_t)(nl - data) : size;
        size_t next = nl ? line + 1 : size;
        if (line > 0 && data[line - 1] == '\r')
            line--;
        if (line > 0)
            trace_line(ud, prefix, data, line, type != CURLINFO_TEXT);
        data += next;
        size -= next;
    }
    return 0;
}

/* ---- the handle ------------------------------------------------------------ */

static void free_headers(struct curl_slist *list)
{
    for (struct curl_slist *s = list; s; s = s->next)
        OPENSSL_cleanse(s->data, strlen(s->data));
    curl_slist_free_all(list);
}

static struct curl_slist *build_headers(const char *api_key)
{
    static const char *const fixed[] = {
        "Content-Type: application/json", "Accept: application/json", "Expect:",
    };
    size_t n = strlen("X-API-Key: ") + strlen(api_key) + 1;
    char *auth = malloc(n);
    if (!auth)
        return NULL;
    snprintf(auth, n, "X-API-Key: %s", api_key);
    struct curl_slist *list = curl_slist_append(NULL, auth);
    OPENSSL_cleanse(auth, n);
    free(auth);
    for (size_t i = 0; list && i < sizeof fixed / sizeof fixed[0]; i++) {
        struct curl_slist *more = curl_slist_append(list, fixed[i]);
        if (!more)
            free_headers(list); /* curl leaves the list alone when it fails */
        list = more;
    }
    return list;
}

/* The route netenv picks, set explicitly: "" disables curl's own reading of
 * the environment, and an empty NOPROXY stops curl second-guessing a proxy
 * netenv chose. */
static err_code set_route(band_http *h, char *err)
{
    netenv_proxy px;
    err_code rc = netenv_proxy_for(h->base, &px, err);
    if (rc != ERR_OK)
        return err_wrap(err, rc, "choosing the route to Band");
    char proxy[300] = "";
    if (px.use)
        snprintf(proxy, sizeof proxy, strchr(px.host, ':') ? "http://[%s]:%d" : "http://%s:%d",
                 px.host, px.port);
    int ok = curl_easy_setopt(h->curl, CURLOPT_PROXY, proxy) == CURLE_OK &&
             curl_easy_setopt(h->curl, CURLOPT_NOPROXY, "") == CURLE_OK &&
             curl_easy_setopt(h->curl, CURLOPT_HTTPPROXYTUNNEL, 1L) == CURLE_OK;
    if (ok && px.use && px.userinfo[0])
        ok = curl_easy_setopt(h->curl, CURLOPT_PROXYUSERPWD, px.userinfo) == CURLE_OK;
    OPENSSL_cleanse(px.userinfo, sizeof px.userinfo);
    return ok ? ERR_OK : err_set(err, ERR_CONFIG, "libcurl refused the proxy settings");
}

/* CURLOPT_CAINFO would replace the system bundle; an extra CA (a staging
 * host behind a TLS-inspecting proxy, the offline TLS world) must be
 * trusted besides it. curl hands over the SSL_CTX before the handshake:
 * the system paths and the extra PEM both go into its store. */
static CURLcode add_ca(CURL *curl, void *ssl_ctx, void *ud)
{
    (void)curl;
    SSL_CTX *ctx = ssl_ctx;
    if (SSL_CTX_set_default_verify_paths(ctx) != 1 ||
        SSL_CTX_load_verify_locations(ctx, ud, NULL) != 1)
        return CURLE_SSL_CACERT_BADFILE;
    return CURLE_OK;
}

static err_code set_extra_ca(band_http *h, const char *ca_file, char *err)
{
    if (!ca_file || !*ca_file)
        return ERR_OK;
    h->ca_file = strdup(ca_file);
    if (!h->ca_file)
        return err_set(err, ERR_NOMEM, "out of memory creating the Band client");
    CURLcode rc = curl_easy_setopt(h->curl, CURLOPT_SSL_CTX_DATA, h->ca_file);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(h->curl, CURLOPT_SSL_CTX_FUNCTION, add_ca);
    if (rc != CURLE_OK)
        return err_set(err, ERR_CONFIG, "an extra CA file (" CONFIG_CA_FILE_VAR ") needs a "
                                        "libcurl built with OpenSSL");
    return ERR_OK;
}

static err_code set_common(band_http *h, const band_http_setup *setup, char *err)
{
    CURL *c = h->curl;
    int ok = curl_easy_setopt(c, CURLOPT_HTTPHEADER, h->headers) == CURLE_OK &&
             curl_easy_setopt(c, CURLOPT_USERAGENT, "band-smoke/" SMOKE_VERSION) == CURLE_OK &&
             curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http") == CURLE_OK &&
             curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK &&
             curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
             curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->curl_err) == CURLE_OK &&
             curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body) == CURLE_OK &&
             curl_easy_setopt(c, CURLOPT_WRITEDATA, h) == CURLE_OK;
    if (ok && setup->trace)
        ok = curl_easy_setopt(c, CURLOPT_DEBUGFUNCTION, on_trace) == CURLE_OK &&
             curl_easy_setopt(c, CURLOPT_DEBUGDATA, setup->trace) == CURLE_OK &&
             curl_easy_setopt(c, CURLOPT_VERBOSE, 1L) == CURLE_OK;
    if (!ok)
        return err_set(err, ERR_CONFIG, "libcurl refused an option (needs 7.85 or later)");
    err_code rc = set_extra_ca(h, setup->ca_file ? setup->ca_file : config_ca_file_env(), err);
    return rc == ERR_OK ? set_route(h, err) : rc;
}

err_code band_http_new(const char *base_url, const band_http_setup *setup,
                       band_http **out, char *err)
{
    if (!out)
        return err_set(err, ERR_USAGE, "band_http_new: missing output");
    *out = NULL;
    if (!base_url || !setup || !setup->api_key || !setup->api_key[0] ||
        setup->connect_timeout_ms <= 0)
        return err_set(err, ERR_USAGE, "band_http_new: base URL, API key and a connect "
                                       "timeout are required");
    size_t blen = base_len(base_url);
    if (!blen)
        return bad_base(err);
    band_http *h = calloc(1, sizeof *h);
    if (!h)
        return err_set(err, ERR_NOMEM, "out of memory creating the Band client");
    h->connect_timeout_ms = setup->connect_timeout_ms;
    h->base = malloc(blen + 1);
    h->curl = curl_easy_init();
    h->headers = build_headers(setup->api_key);
    if (!h->base || !h->curl || !h->headers) {
        band_http_free(h);
        return err_set(err, ERR_NOMEM, "out of memory creating the Band client");
    }
    memcpy(h->base, base_url, blen);
    h->base[blen] = '\0';
    err_code rc = set_common(h, setup, err);
    if (rc != ERR_OK) {
        band_http_free(h);
        return rc;
    }
    *out = h;
    return ERR_OK;
}

void band_http_free(band_http *h)
{
    if (!h)
        return;
    if (h->curl)
        curl_easy_cleanup(h->curl);
    free_headers(h->headers);
    wipe_body(h);
    free(h->body);
    free(h->base);
    free(h->ca_file);
    free(h);
}

/* ---- one attempt ------------------------------------------------------- */

/* What one attempt saw, beyond the status. */
typedef struct outcome {
    long status;         /* 0 when no response came */
    long retry_after_ms; /* from Retry-After; 0 when none */
    int sent;            /* some of the request may have left this host */
    int transient;       /* on failure: another attempt could succeed */
} outcome;

/* curl's own GET and POST, anything else as a custom verb on top. */
static int set_method(CURL *c, const char *method, const char *json)
{
    int get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
    if (post || json) {
        const char *body = json ? json : "";
        return curl_easy_setopt(c, CURLOPT_POSTFIELDS, body) == CURLE_OK &&
               curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body)) == CURLE_OK &&
               curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, post ? NULL : method) == CURLE_OK;
    }
    return curl_easy_setopt(c, CURLOPT_HTTPGET, 1L) == CURLE_OK &&
           curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, get ? NULL : method) == CURLE_OK;
}

/* What a curl failure means to our callers. */
static err_code classify(CURLcode cc, int *transient)
{
    *transient = 0;
    switch (cc) {
    case CURLE_OPERATION_TIMEDOUT:
        *transient = 1;
        return ERR_TIMEOUT;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        *transient = 1;
        return ERR_NETWORK;
    case CURLE_OUT_OF_MEMORY:
        return ERR_NOMEM;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return ERR_CONFIG;
    default:
        return ERR_NETWORK; /* certificates, TLS setup: another try cannot help */
    }
}

/* Only these failures prove the request never reached the server. */
static int never_sent(CURL *c, CURLcode cc)
{
    long request_size = 0;
    curl_easy_getinfo(c, CURLINFO_REQUEST_SIZE, &request_size);
    return request_size == 0 &&
           (cc == CURLE_COULDNT_RESOLVE_HOST || cc == CURLE_COULDNT_RESOLVE_PROXY ||
            cc == CURLE_COULDNT_CONNECT);
}

static err_code failure(band_http *h, CURLcode cc, const band_http_request *rq, outcome *o,
                        char *err)
{
    o->sent = !never_sent(h->curl, cc);
    if (h->too_big)
        return err_set(err, ERR_PROTOCOL, "%s %s: response body over %ld bytes", rq->method,
                       rq->path, (long)BAND_HTTP_MAX_BODY);
    err_code rc = classify(cc, &o->transient);
    if (err) {
        char raw[ERR_BUFSZ + CURL_ERROR_SIZE];
        snprintf(raw, sizeof raw, "%s %s: %s", rq->method, rq->path,
                 h->curl_err[0] ? h->curl_err : curl_easy_strerror(cc));
        redact_into(raw, err, ERR_BUFSZ);
    }
    return rc;
}

static void read_answer(band_http *h, outcome *o)
{
    curl_off_t retry_after = 0;
    curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &o->status);
    curl_easy_getinfo(h->curl, CURLINFO_RETRY_AFTER, &retry_after);
    /* curl < 8.12 reports a date in the past as a negative wait */
    if (retry_after > 0)
        o->retry_after_ms = retry_after > 86400 ? 86400000L : (long)retry_after * 1000L;
    o->sent = 1;
}

static err_code attempt(band_http *h, const band_http_request *rq, long timeout_ms,
                        outcome *o, char *err)
{
    memset(o, 0, sizeof *o);
    wipe_body(h);
    h->curl_err[0] = '\0';
    char *url = NULL;
    err_code rc = band_http_join_url(h->base, rq->path, &url, err);
    if (rc != ERR_OK)
        return rc;
    long connect_ms = h->connect_timeout_ms < timeout_ms ? h->connect_timeout_ms : timeout_ms;
    int ok = curl_easy_setopt(h->curl, CURLOPT_URL, url) == CURLE_OK &&
             set_method(h->curl, rq->method, rq->json) &&
             curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, timeout_ms) == CURLE_OK &&
             curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, connect_ms) == CURLE_OK;
    free(url);
    if (!ok)
        return err_set(err, ERR_CONFIG, "%s %s: libcurl refused the request", rq->method,
                       rq->path);
    CURLcode cc = curl_easy_perform(h->curl);
    if (cc != CURLE_OK)
        return failure(h, cc, rq, o, err);
    read_answer(h, o);
    return ERR_OK;
}

/* ---- retries -------------------------------------------------------------- */

static long backoff_ms(const band_http_request *rq, int attempts)
{
    long base = rq->retry_base_ms > 0 ? rq->retry_base_ms : BAND_HTTP_RETRY_BASE_MS;
    long cap = rq->retry_cap_ms > 0 ? rq->retry_cap_ms : BAND_HTTP_RETRY_CAP_MS;
    long step = base;
    for (int i = 1; i < attempts && step < cap; i++)
        step *= 2;
    if (step > cap)
        step = cap;
    unsigned int r = 0;
    if (RAND_bytes((unsigned char *)&r, sizeof r) != 1)
        r = 0; /* no jitter is better than no retry */
    return step / 2 + (long)(r % (unsigned int)(step / 2 + 1));
}

/* How long to wait before attempt number attempts + 1, or -1 for never. */
static long retry_wait(const band_http_request *rq, err_code rc, const outcome *o,
                       int attempts)
{
    if (attempts > rq->max_retries)
        return -1;
    if (rc == ERR_OK) {
        long s = o->status;
        if (!rq->repeatable || !(s == 408 || s == 429 || (s >= 500 && s <= 599)))
            return -1;
        if ((s == 429 || s == 503) && o->retry_after_ms > 0)
            return o->retry_after_ms;
        return backoff_ms(rq, attempts);
    }
    if ((rc == ERR_NETWORK || rc == ERR_TIMEOUT) && o->transient &&
        (rq->repeatable || !o->sent))
        return backoff_ms(rq, attempts);
    return -1;
}

/* ---- progress: an exchange over 2 s shows itself (progress.h) ---------- */

static err_code band_http_send_quiet(band_http *h, const band_http_request *rq,
                                     band_http_response *resp, progress *pg, char *err);

/* curl's transfer-progress hook, called about once a second while a
 * transfer waits and more often while it moves: the same tick proc_run's
 * waits give. Never aborts the transfer: an exchange is bounded by its own
 * timeout, and one that follows a stop signal (the reap after an
 * interrupted launch) must still get to delete what was made. */
static int on_xferinfo(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    progress_tick(ud);
    return 0;
}

static int watch_transfer(band_http *h, progress *pg)
{
    return curl_easy_setopt(h->curl, CURLOPT_XFERINFOFUNCTION, on_xferinfo) == CURLE_OK &&
           curl_easy_setopt(h->curl, CURLOPT_XFERINFODATA, pg) == CURLE_OK &&
           curl_easy_setopt(h->curl, CURLOPT_NOPROGRESS, pg ? 0L : 1L) == CURLE_OK;
}

/* A retry wait, in slices so the progress keeps showing. */
static void nap_showing(progress *pg, long ms)
{
    int64_t until = clock_mono_ms() + ms;
    for (int64_t left = ms; left > 0; left = until - clock_mono_ms()) {
        clock_sleep_ms(left < 250 ? left : 250);
        progress_tick(pg);
    }
}

err_code band_http_send(band_http *h, const band_http_request *rq,
                        band_http_response *resp, char *err)
{
    if (!resp)
        return err_set(err, ERR_USAGE, "band_http_send: missing output");
    if (!h || !rq || !rq->method || !rq->path)
        return band_http_send_quiet(h, rq, resp, NULL, err);
    progress pg;
    char what[160];
    snprintf(what, sizeof what, "Band's answer to %s %.100s", rq->method, rq->path);
    progress_begin(&pg, NULL, what, rq->timeout_ms);
    err_code rc = watch_transfer(h, &pg) ? band_http_send_quiet(h, rq, resp, &pg, err)
                                         : err_set(err, ERR_CONFIG, "libcurl refused the "
                                                                    "progress hook");
    watch_transfer(h, NULL);
    progress_end(&pg, rc == ERR_OK ? "answered" : err_str(rc));
    return rc;
}

static err_code band_http_send_quiet(band_http *h, const band_http_request *rq,
                                     band_http_response *resp, progress *pg, char *err)
{
    if (!resp)
        return err_set(err, ERR_USAGE, "band_http_send: missing output");
    memset(resp, 0, sizeof *resp);
    resp->body = "";
    if (!h || !rq || !rq->method || !rq->path || rq->timeout_ms <= 0 || rq->max_retries < 0)
        return err_set(err, ERR_USAGE, "band_http_send: bad arguments");
    int64_t start = clock_mono_ms(), deadline = start + rq->timeout_ms;
    outcome o;
    err_code rc;
    for (;;) {
        /* curl reads a timeout of 0 as "none": a nap that overslept ends here */
        int64_t left = deadline - clock_mono_ms();
        if (left <= 0) {
            memset(&o, 0, sizeof o);
            rc = err_set(err, ERR_TIMEOUT, "%s %s: deadline of %ld ms passed", rq->method,
                         rq->path, rq->timeout_ms);
            break;
        }
        rc = attempt(h, rq, (long)left, &o, err);
        resp->attempts++;
        long wait = retry_wait(rq, rc, &o, resp->attempts);
        left = deadline - clock_mono_ms();
        if (wait < 0)
            break;
        if (wait >= left) {
            resp->skipped_wait_ms = left > 0 ? wait : 0;
            break;
        }
        if (pg)
            nap_showing(pg, wait);
        else
            clock_sleep_ms(wait);
        resp->waited_ms += wait;
    }
    resp->status = o.status;
    resp->body = h->body && rc == ERR_OK ? h->body : "";
    resp->len = rc == ERR_OK ? h->len : 0;
    resp->elapsed_ms = clock_mono_ms() - start;
    return rc;
}
