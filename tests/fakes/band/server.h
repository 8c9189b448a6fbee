/* server: the fake Band process's shared state and its libwebsockets loop.
 *
 * One lws context, two vhosts on 127.0.0.1:
 *   api      REST (protocol §3-4), the Phoenix WebSocket (§5) and /_fake/...;
 *            the refuse fault applies here.
 *   control  /_fake/... only, so tests can steer the fake while the api port
 *            refuses connections.
 * Everything runs on the lws service thread; handlers reach the server
 * through lws_context_user(). The server owns the store, the open Phoenix
 * sockets, the fault plans and the counters behind GET /_fake/stats.
 */
#ifndef FAKE_BAND_SERVER_H
#define FAKE_BAND_SERVER_H

#include <libwebsockets.h>
#include <signal.h>
#include <stdio.h>

#include "err.h"
#include "faults.h"
#include "http.h"
#include "store.h"
#include "vec.h"

typedef struct server {
    struct lws_context *ctx;
    store *st;
    faults faults;
    vec sockets;           /* ws_conn*, every open Phoenix connection */
    long rest_calls;       /* answered API requests, /_fake/... excluded */
    long upgrade_attempts; /* WebSocket upgrades asked for, accepted or not */
    FILE *log;             /* request log, or NULL */
    int api_port;
    int control_port;
    int stopping; /* set by POST /_fake/shutdown */
    long heartbeat_timeout_ms; /* close a socket silent this long; 0 = never */
    long heartbeat_drops;      /* sockets dropped for it (stats) */
    lws_sorted_usec_list_t heartbeat_timer;
    http_site api_site;
    http_site control_site;
    struct lws_protocols api_protocols[3];     /* http, phoenix, terminator */
    struct lws_protocols control_protocols[2]; /* http, terminator */
} server;

/* PEM files of the api port's certificate and key (TLS world). */
typedef struct server_tls {
    const char *cert, *key;
} server_tls;

/* Binds both vhosts (port 0 = ephemeral for the api port; the control
 * port is always ephemeral) and fills api_port and control_port. With tls
 * (may be NULL) the api port serves https and wss only; the control port
 * stays plain http. `st` and `log` (may be NULL) stay the caller's. */
err_code server_start(server *srv, store *st, int port, const server_tls *tls, FILE *log,
                      char *err);

/* Serves until POST /_fake/shutdown or until *interrupted turns nonzero
 * (a signal handler sets it and calls lws_cancel_service). */
void server_run(server *srv, const volatile sig_atomic_t *interrupted);

/* Closes every connection and the context. Safe on a server that failed to start. */
void server_close(server *srv);

/* One line in the request log, when there is one. Never give it a key. */
void server_log(server *srv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
