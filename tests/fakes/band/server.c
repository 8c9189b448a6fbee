#include "server.h"

#include <stdarg.h>
#include <string.h>

#include "clock.h"
#include "control.h"
#include "redact.h"
#include "reply.h"
#include "rest.h"
#include "ws.h"

/* ---- the two sites ------------------------------------------------------ */

static const char *injected_code(int status)
{
    switch (status) {
    case 429: return "too_many_requests";
    case 500: return "internal_error";
    case 502: return "bad_gateway";
    case 503: return "service_unavailable";
    case 504: return "gateway_timeout";
    default: return "injected_failure";
    }
}

static void api_route(void *app, const http_request *req, http_response *resp)
{
    server *srv = app;
    int status, retry_after;
    if (strncmp(req->path, CONTROL_PREFIX, strlen(CONTROL_PREFIX)) == 0) {
        control_route(srv, req, resp);
        return;
    }
    srv->rest_calls++;
    if (faults_take_failure(&srv->faults, req->method, req->path, &status, &retry_after)) {
        reply_error(resp, status, injected_code(status), NULL, "failure injected by the test");
        resp->retry_after = retry_after;
    } else {
        rest_route(srv, req, resp);
    }
    resp->delay_ms = srv->faults.delay_ms;
}

static int api_refuse(void *app)
{
    server *srv = app;
    return faults_refusing(&srv->faults, clock_mono_ms());
}

static int api_upgrade(void *app, struct lws *wsi, http_response *reject)
{
    return ws_upgrade(app, wsi, reject);
}

static void control_site_route(void *app, const http_request *req, http_response *resp)
{
    if (strncmp(req->path, CONTROL_PREFIX, strlen(CONTROL_PREFIX)) == 0)
        control_route(app, req, resp);
    else
        reply_error(resp, 404, "not_found", NULL, "the control port serves /_fake/ only");
}

static void answered(void *app, const char *method, const char *path, int status)
{
    server_log(app, "%s %s %d", method, path, status);
}

/* ---- lifecycle ---------------------------------------------------------- */

static void lws_log_line(int level, const char *line)
{
    (void)level;
    redact_fprintf(stderr, "fake-band: lws: %s", line);
}

static void fill_protocols(server *srv)
{
    srv->api_protocols[0] = (struct lws_protocols){
        .name = "http", .callback = http_callback, .per_session_data_size = http_session_size()};
    srv->api_protocols[1] = (struct lws_protocols){.name = "phoenix",
                                                   .callback = ws_callback,
                                                   .per_session_data_size = ws_session_size(),
                                                   .rx_buffer_size = 16384};
    srv->control_protocols[0] = srv->api_protocols[0];
    srv->api_site = (http_site){.app = srv,
                                .route = api_route,
                                .refuse = api_refuse,
                                .upgrade = api_upgrade,
                                .answered = answered};
    srv->control_site = (http_site){.app = srv, .route = control_site_route, .answered = answered};
}

static struct lws_vhost *listen_on(server *srv, const char *name, int port,
                                   const struct lws_protocols *protocols, http_site *site,
                                   const server_tls *tls)
{
    /* Upgrades without a subprotocol (Phoenix clients send none) go to
     * "phoenix", not to protocols[0]. */
    static const struct lws_protocol_vhost_options is_default = {NULL, NULL, "default", "1"};
    static const struct lws_protocol_vhost_options phoenix = {NULL, &is_default, "phoenix", ""};
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.vhost_name = name;
    info.port = port;
    info.iface = "127.0.0.1";
    /* Without DISABLE_IPV6, lws binds *:port and ignores iface. */
    info.options = LWS_SERVER_OPTION_DISABLE_IPV6;
    info.protocols = protocols;
    info.pvo = protocols == srv->api_protocols ? &phoenix : NULL;
    info.user = site;
    if (tls) { /* https and wss on this port only; the control port stays plain */
        /* lws 4.1 reads this per vhost too: without it the port stays plain */
        info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
        info.ssl_cert_filepath = tls->cert;
        info.alpn = "http/1.1"; /* the fake speaks HTTP/1.1 only; libcurl would pick h2 */
        info.ssl_private_key_filepath = tls->key;
    }
    return lws_create_vhost(srv->ctx, &info);
}

err_code server_start(server *srv, store *st, int port, const server_tls *tls, FILE *log,
                      char *err)
{
    memset(srv, 0, sizeof *srv);
    srv->st = st;
    srv->log = log;
    fill_protocols(srv);
    lws_set_log_level(LLL_ERR | LLL_WARN, lws_log_line);

    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS | LWS_SERVER_OPTION_DISABLE_IPV6;
    if (tls)
        info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
    info.user = srv;
    /* lws drops a request that goes unanswered for timeout_secs (5 s by
     * default); a delayed answer must outlive the longest delay. */
    info.timeout_secs = FAULTS_DELAY_MAX_MS / 1000 + 15;
    srv->ctx = lws_create_context(&info);
    if (!srv->ctx)
        return err_set(err, ERR_NETWORK, "cannot create the libwebsockets context");

    struct lws_vhost *api =
        listen_on(srv, "api", port, srv->api_protocols, &srv->api_site, tls);
    if (!api)
        return err_set(err, ERR_NETWORK, "cannot listen on 127.0.0.1:%d%s", port,
                       tls ? " with the given certificate and key" : "");
    struct lws_vhost *control =
        listen_on(srv, "control", 0, srv->control_protocols, &srv->control_site, NULL);
    if (!control)
        return err_set(err, ERR_NETWORK, "cannot listen on a control port");
    srv->api_port = lws_get_vhost_listen_port(api);
    srv->control_port = lws_get_vhost_listen_port(control);
    return ERR_OK;
}

/* Checks four times per timeout, so a silent socket goes within 1.25x. */
static void heartbeat_check(lws_sorted_usec_list_t *timer)
{
    server *srv = lws_container_of(timer, server, heartbeat_timer);
    ws_drop_silent(srv, clock_mono_ms(), srv->heartbeat_timeout_ms);
    lws_sul_schedule(srv->ctx, 0, &srv->heartbeat_timer, heartbeat_check,
                     (lws_usec_t)(srv->heartbeat_timeout_ms / 4) * LWS_US_PER_MS);
}

void server_run(server *srv, const volatile sig_atomic_t *interrupted)
{
    if (srv->heartbeat_timeout_ms > 0)
        lws_sul_schedule(srv->ctx, 0, &srv->heartbeat_timer, heartbeat_check,
                         (lws_usec_t)(srv->heartbeat_timeout_ms / 4) * LWS_US_PER_MS);
    while (!srv->stopping && !*interrupted)
        if (lws_service(srv->ctx, 0) < 0)
            break;
}

void server_close(server *srv)
{
    if (srv->ctx) {
        lws_sul_schedule(srv->ctx, 0, &srv->heartbeat_timer, NULL, LWS_SET_TIMER_USEC_CANCEL);
        lws_context_destroy(srv->ctx); /* closes every socket: ws_conn cleanup runs here */
    }
    srv->ctx = NULL;
    vec_release(&srv->sockets);
}

void server_log(server *srv, const char *fmt, ...)
{
    if (!srv->log)
        return;
    char line[1024], at[CLOCK_ISO_SZ];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    redact_fprintf(srv->log, "%s %s\n", clock_format_iso(clock_wall_ms(NULL), at), line);
    fflush(srv->log);
}
