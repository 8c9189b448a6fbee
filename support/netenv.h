/* netenv: which HTTP proxy a URL should go through, from the environment.
 *
 * Inside a Docker Sandbox the only way out is the sandbox proxy, announced
 * in HTTP_PROXY / HTTPS_PROXY / http_proxy / https_proxy with NO_PROXY.
 * libcurl and libwebsockets read different subsets of those (lws: only
 * lowercase http_proxy and no no_proxy at all), so left alone the REST and
 * WebSocket legs of one agent could take different routes. Both clients ask
 * this module instead and set the answer explicitly.
 *
 * Rules (a variable set to "" counts as unset, as ctest's `unset:` leaves
 * it empty):
 * - proxy: for https/wss the first set of https_proxy, HTTPS_PROXY,
 *   all_proxy, ALL_PROXY; for http/ws the first of http_proxy, HTTP_PROXY,
 *   all_proxy, ALL_PROXY. Values are `[http://][user:pass@]host:port[/]`,
 *   an IPv6 host in brackets (`[::1]:3128`). The port is required (curl
 *   and Python disagree on the default), only http:// proxies exist here.
 * - exemptions: the first set of no_proxy, NO_PROXY; a comma list whose
 *   entries (spaces around them ignored) are
 *     `*`                     every host
 *     `example.com`           that host and every subdomain
 *     `.example.com`, `*.example.com`   the same (curl and Python agree)
 *     `host:port`, `[v6]:port`          only that port
 *     `::1`, `[::1]`          an IPv6 literal (compared as addresses)
 *     `10.0.0.0/8`, `fd00::/8`          an address range (IP hosts only)
 *   IP hosts never match by suffix: `2.3.4` does not exempt 1.2.3.4.
 *
 * Errors: ERR_USAGE when `url` is not an http/https/ws/wss URL with a host;
 * ERR_CONFIG when a proxy or no_proxy variable is malformed. The message
 * names the variable only, never its value: a value may carry credentials.
 * A malformed variable is reported even when no_proxy exempts the URL, so
 * a bad setting fails the first run rather than the first proxied one.
 */
#ifndef SMOKE_NETENV_H
#define SMOKE_NETENV_H

#include <stddef.h>

#include "err.h"

typedef struct netenv_proxy {
    int use;         /* 0 = connect directly */
    char host[256];  /* proxy host ("" when !use); IPv6 without brackets */
    int port;
    char userinfo[256]; /* "user:pass" percent-decoded, or ""; secret-ish:
                           never print */
} netenv_proxy;

/* Decides the proxy for `url` from the process environment (getenv). */
err_code netenv_proxy_for(const char *url, netenv_proxy *out, char *err);

/* The same decision from an explicit getenv-like lookup (tests). `lookup`
 * returns NULL for an unset name; the returned text must stay valid until
 * the call returns. */
err_code netenv_proxy_for_env(const char *url,
                              const char *(*lookup)(const char *name, void *ud),
                              void *ud, netenv_proxy *out, char *err);

#endif
