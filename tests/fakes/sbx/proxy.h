/* proxy: the fake daemon's HTTP proxy, one connection table for all
 * sandboxes; the daemon owns the listeners and hands accepted clients in.
 *
 * What it does, as the real sandbox proxy (reference/sbx-cli.md section 4):
 * - CONNECT host:port, allowed: dial, answer exactly `HTTP/1.0 200 OK\r\n\r\n`
 *   (goproxy's reply, no headers), then tunnel bytes both ways, half-closes
 *   passed on. A dial failure is a 502 and `<dial failed>` in the log.
 * - CONNECT to a denied target: still `HTTP/1.0 200 OK`, then the first
 *   request inside the tunnel gets `HTTP/1.1 403 Forbidden` with the plain
 *   body `Blocked by network policy: domain HOST:PORT` / `detail: ...`, and
 *   the connection closes. (The real proxy terminates TLS first; the fake
 *   answers in clear, which is what a plain-HTTP client inside sees.)
 * - An absolute-form plain HTTP request (`GET http://h:p/x HTTP/1.1`, what
 *   libcurl sends to an HTTP proxy for http:// URLs): the same decision; an
 *   allowed one is forwarded in origin form with `Connection: close` (one
 *   request per connection keeps the fake simple), and the answer's head is
 *   rewritten the same way (hop-by-hop headers dropped, `Connection: close`
 *   added) so a pooling client (httpx) never reuses the connection the
 *   proxy is about to end; a denied one gets the 403.
 * Every decision goes through the hooks: the daemon decides by the store's
 * policy and records what happened for `sbx policy log`.
 *
 * Host names are resolved with a blocking getaddrinfo: the tests and the
 * rehearsal only dial numeric loopback addresses.
 */
#ifndef FSBX_PROXY_H
#define FSBX_PROXY_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

#define PROXY_MAX_CONNS 256
#define PROXY_POLLFDS (2 * PROXY_MAX_CONNS)

typedef struct proxy_hooks {
    /* The policy for host:port seen through sandbox's listener. */
    void (*decide)(void *ud, const char *sandbox, const char *host, int port, pol_verdict *v);
    /* What finally happened, once per proxied connection. kind is the
     * PROXY column of policy log ("forward-bypass" for CONNECT tunnels,
     * "forward" for plain HTTP); v->rule is "<dial failed>" when the
     * allowed target could not be reached. */
    void (*record)(void *ud, const char *sandbox, const char *host, int port, const char *kind,
                   const pol_verdict *v);
    void *ud;
} proxy_hooks;

typedef struct proxy proxy;

/* A proxy with no connections; NULL when out of memory. */
proxy *proxy_new(const proxy_hooks *hooks);

/* Closes every connection and frees the proxy. NULL is fine. */
void proxy_free(proxy *p);

/* Takes ownership of an accepted client socket of `sandbox`'s listener,
 * accepted at now_ms. When the table is full the client is closed. */
void proxy_accept(proxy *p, int fd, const char *sandbox, int64_t now_ms);

/* The descriptors to poll, written into fds (room for PROXY_POLLFDS);
 * returns how many. proxy_step must get the same array back after poll. */
size_t proxy_pollfds(proxy *p, struct pollfd *fds);

/* Acts on poll's answer, then on expired deadlines (slow request heads,
 * slow dials, denied tunnels whose client never speaks). */
void proxy_step(proxy *p, const struct pollfd *fds, size_t n, int64_t now_ms);

/* Closes every connection at once (the net-cut fault), or those of one
 * sandbox (it stopped). */
void proxy_drop_all(proxy *p);
void proxy_drop_sandbox(proxy *p, const char *sandbox);

/* Live connections. */
size_t proxy_count(const proxy *p);

#endif
