/* band_http: one HTTP exchange with a Band server, over libcurl.
 *
 * This is the transport under band_rest (read band_rest.h first; most code
 * wants that, not this). A band_http is one libcurl easy handle wired once
 * for one Band base URL and one API key; band_http_send() sends one
 * request, retries it when that is safe and worth it, and reports the
 * last answer. It knows HTTP, not JSON: what a body means is band_rest's
 * job.
 *
 * What every request gets, so no caller can forget it:
 * - headers `X-API-Key`, `Content-Type` and `Accept: application/json`,
 *   `User-Agent: band-smoke/<SMOKE_VERSION>`, and an empty `Expect:` (curl
 *   would otherwise stall a body over 1 KiB for a 100-continue);
 * - the route netenv_proxy_for() picks for the base URL, set explicitly
 *   (an empty CURLOPT_PROXY when direct) so this leg and the WebSocket leg
 *   take the same path, and always through a CONNECT tunnel: without one an
 *   http:// request would hand the key to the proxy in clear text;
 * - only http and https, no redirects (a redirect would be answered as
 *   the 3xx it is), no signals (safe in threaded programs), curl's error
 *   buffer for messages;
 * - a cap of BAND_HTTP_MAX_BODY bytes on the response body;
 * - an exchange (retries and waits included) that lasts over 2 s shows its
 *   progress on stdout like every other wait (progress.h), from curl's
 *   transfer-progress hook: a stalled server is never silence.
 *
 * The trace: with a trace FILE, curl's verbose output is written there
 * line by line, "* " for curl's notes, "> " and "< " for header lines.
 * Header values that authenticate (X-API-Key, Authorization,
 * Proxy-Authorization, Cookie, Set-Cookie) are masked by name, every line
 * then passes through redact, and bodies and TLS records are dropped.
 *
 * Secrets: the key is copied into the handle and wiped (OPENSSL_cleanse)
 * by band_http_free, as is every response body when the next request
 * starts: a register response carries a freshly minted key.
 *
 * Threads and signals: a handle is used by one thread at a time. Call
 * curl_global_init() once in main before starting threads; otherwise the
 * first band_http_new() does it. With signals off, curl no longer ignores
 * SIGPIPE during a transfer: a program that may write to a dead TLS
 * connection ignores SIGPIPE itself, in main.
 */
#ifndef SMOKE_BAND_HTTP_H
#define SMOKE_BAND_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"

/* Response bodies larger than this fail with ERR_PROTOCOL. The largest
 * Band answer the smoke asks for is a page of 100 messages. */
#define BAND_HTTP_MAX_BODY (8L * 1024 * 1024)

/* Backoff between retries (see band_http_send). */
#define BAND_HTTP_RETRY_BASE_MS 500
#define BAND_HTTP_RETRY_CAP_MS 8000

typedef struct band_http band_http;

/* How to reach the server; everything is copied by band_http_new. */
typedef struct band_http_setup {
    const char *api_key;     /* required; sent as X-API-Key. Secret: never printed */
    const char *ca_file;     /* PEM CA(s) trusted besides the system store; NULL =
                                SMOKE_CA_FILE when set (config_ca_file_env), else
                                the system store alone. Verification stays on. */
    FILE *trace;             /* curl's verbose trace, redacted (see above); NULL = none.
                                Not owned: it must outlive the handle */
    long connect_timeout_ms; /* bound on making one connection (TCP, proxy tunnel,
                                TLS); never more than what is left of a deadline. > 0 */
} band_http_setup;

/* Creates a handle for `base_url` (see band_http_join_url for the shape
 * it must have). ERR_USAGE for a missing argument, an empty key or a
 * connect timeout <= 0, ERR_CONFIG for a base URL that is not
 * http(s)://host[...] or a proxy variable netenv cannot parse, ERR_NOMEM.
 * On success *out is the caller's, to release with band_http_free. */
err_code band_http_new(const char *base_url, const band_http_setup *setup,
                       band_http **out, char *err);

/* Releases the handle and wipes the key and the last body. NULL is a no-op. */
void band_http_free(band_http *h);

/* One exchange: a request and the retries it may take. */
typedef struct band_http_request {
    const char *method; /* "GET", "POST", "DELETE", ... */
    const char *path;   /* starts with "/"; may carry a query string */
    const char *json;   /* the body, or NULL (a POST then sends an empty body) */
    long timeout_ms;    /* deadline of the whole exchange, waits included. > 0 */
    int max_retries;    /* attempts allowed after the first. >= 0 */
    int repeatable;     /* 1: harmless to send twice (reads, deletes); 0: sent
                           again only when it provably never left this host
                           (connection refused, name not resolved) */
    long retry_base_ms; /* first backoff step; 0 = BAND_HTTP_RETRY_BASE_MS */
    long retry_cap_ms;  /* largest backoff step; 0 = BAND_HTTP_RETRY_CAP_MS */
} band_http_request;

/* What the exchange ended with. The body belongs to the handle: it stays
 * valid (NUL-terminated, `len` bytes before the NUL) until the next
 * band_http_send or band_http_free on the same handle. */
typedef struct band_http_response {
    long status;          /* HTTP status of the last attempt; 0 when none came */
    const char *body;     /* "" when empty; never NULL after a send */
    size_t len;
    int attempts;         /* requests sent */
    int64_t waited_ms;    /* slept between attempts */
    int64_t elapsed_ms;   /* the whole exchange */
    long skipped_wait_ms; /* a retry wait that would have passed the deadline, so
                             the exchange ended early; 0 when none */
} band_http_response;

/* Sends the request, and again while the answer is worth retrying and
 * the budget allows: HTTP 408, 429 and 5xx (when repeatable), and
 * connection failures that can pass (refused, reset, DNS, one attempt's
 * timeout; for a non-repeatable request only those that prove it never
 * left). Waits double from rq->retry_base_ms to rq->retry_cap_ms (by
 * default BAND_HTTP_RETRY_BASE_MS to BAND_HTTP_RETRY_CAP_MS), each a random point in the upper half of its
 * step so clients that failed together do not return together; a 429 or
 * 503 with Retry-After (seconds or a date) waits exactly that long
 * instead. A wait that would pass the deadline is not taken.
 *
 * Returns ERR_OK whenever the last attempt got an HTTP response, whatever
 * its status: read resp->status. Otherwise: ERR_TIMEOUT when the deadline
 * (or the last connect timeout) passed, ERR_NETWORK when the connection
 * could not be made or broke (TLS failures included), ERR_PROTOCOL when a
 * body exceeds BAND_HTTP_MAX_BODY, ERR_CONFIG when curl refuses the URL,
 * ERR_NOMEM, ERR_USAGE for bad arguments. The message starts with the
 * method and path and never holds the key. */
err_code band_http_send(band_http *h, const band_http_request *rq,
                        band_http_response *resp, char *err);

/* Joins a base URL and an absolute path into a malloc'd URL (*out, the
 * caller's to free): trailing slashes of the base are dropped and any
 * path prefix it has is kept ("https://h/band/" + "/api/v1/x" =
 * "https://h/band/api/v1/x"). The base must pass config_url_usable (the
 * guard's own judge: http:// or https://, a plain host, a valid port, no
 * userinfo, query, fragment or whitespace); the path must start
 * with "/" and hold no whitespace. ERR_CONFIG for a bad base, ERR_USAGE
 * for a bad path, ERR_NOMEM. Pure: no I/O, no global state. */
err_code band_http_join_url(const char *base, const char *path, char **out,
                            char *err);

/* Appends "?key=value" (or "&key=value" when path already has a query) to
 * the NUL-terminated path in a buffer of cap bytes, percent-encoding the
 * value byte by byte (RFC 3986 unreserved bytes stay as they are). Returns
 * 0, leaving the path cut but terminated, when it does not fit. */
int band_http_add_query(char *path, size_t cap, const char *key, const char *value);

#endif
