#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "must.h"

#define HTTP_HEADER_ROOM 1024

typedef enum exchange_state {
    EXCHANGE_IDLE,    /* between requests on a kept-alive connection */
    EXCHANGE_READING, /* headers seen, body still coming */
    EXCHANGE_DELAYED, /* answered, waiting for the delay timer */
    EXCHANGE_READY    /* answered, waiting for the socket to be writeable */
} exchange_state;

typedef struct http_exchange {
    exchange_state state;
    http_request req;
    http_response resp;
    int close_after; /* end the connection once answered */
} http_exchange;

size_t http_session_size(void)
{
    return sizeof(http_exchange);
}

const char *http_param_get(const http_request *req, const char *name)
{
    for (int i = 0; i < req->nparams; i++)
        if (strcmp(req->params[i].name, name) == 0)
            return req->params[i].value;
    return NULL;
}

void http_answer(http_response *resp, int status, char *body)
{
    free(resp->body);
    resp->status = status;
    resp->body = body;
}

static void exchange_reset(http_exchange *ex)
{
    free(ex->req.body);
    free(ex->resp.body);
    memset(ex, 0, sizeof *ex);
}

static const http_site *site_of(struct lws *wsi)
{
    return lws_vhost_user(lws_get_vhost(wsi));
}

static const char *method_of(struct lws *wsi)
{
    static const struct {
        enum lws_token_indexes token;
        const char *name;
    } methods[] = {
        {WSI_TOKEN_GET_URI, "GET"},       {WSI_TOKEN_POST_URI, "POST"},
        {WSI_TOKEN_DELETE_URI, "DELETE"}, {WSI_TOKEN_PUT_URI, "PUT"},
        {WSI_TOKEN_PATCH_URI, "PATCH"},   {WSI_TOKEN_OPTIONS_URI, "OPTIONS"},
        {WSI_TOKEN_HEAD_URI, "HEAD"},
    };
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        if (lws_hdr_total_length(wsi, methods[i].token) > 0)
            return methods[i].name;
    return "?";
}

/* Copies src when it fits; a value too long for the field is dropped, not
 * cut, so a truncated key can never match another one. */
static int copy_whole(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        return -1;
    memcpy(dst, src, n + 1);
    return 0;
}

static void read_params(struct lws *wsi, http_request *req)
{
    char frag[sizeof req->params[0].name + sizeof req->params[0].value + 2];
    for (int n = 0; req->nparams < HTTP_PARAMS_MAX; n++) {
        if (lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, n) <= 0)
            break;
        if (lws_hdr_copy_fragment(wsi, frag, sizeof frag, WSI_TOKEN_HTTP_URI_ARGS, n) < 0)
            continue; /* longer than any parameter we read */
        char *eq = strchr(frag, '=');
        if (eq)
            *eq = '\0';
        http_param *p = &req->params[req->nparams];
        if (copy_whole(p->name, sizeof p->name, frag) == 0 &&
            copy_whole(p->value, sizeof p->value, eq ? eq + 1 : "") == 0)
            req->nparams++;
    }
}

const char *http_url_arg(struct lws *wsi, const char *name, char *out, size_t cap)
{
    char frag[HTTP_PATH_MAX];
    size_t n = strlen(name);
    for (int i = 0; lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, i) > 0; i++) {
        if (lws_hdr_copy_fragment(wsi, frag, sizeof frag, WSI_TOKEN_HTTP_URI_ARGS, i) < 0)
            continue;
        if (strncmp(frag, name, n) == 0 && frag[n] == '=')
            return copy_whole(out, cap, frag + n + 1) == 0 ? out : NULL;
    }
    return NULL;
}

static void read_api_key(struct lws *wsi, http_request *req)
{
    static const char name[] = "x-api-key:";
    char value[IDENT_KEY_SZ + 8];
    if (lws_hdr_custom_copy(wsi, value, sizeof value, name, (int)strlen(name)) < 0)
        return;
    const char *v = value;
    while (*v == ' ' || *v == '\t')
        v++;
    copy_whole(req->api_key, sizeof req->api_key, v);
}

typedef enum body_plan {
    BODY_NONE,    /* the request is whole now */
    BODY_READ,    /* lws delivers a body, then BODY_COMPLETION */
    BODY_UNFRAMED /* see below */
} body_plan;

/* lws reads a body for POST (even an explicit empty one) and for any
 * method with a positive Content-Length. A POST, PUT or PATCH without
 * Content-Length has no body in HTTP/1.1, but lws 4.1 would wait for one
 * until the connection ends: such a request is answered at once and its
 * connection closed, so no later request is eaten as its body. */
static body_plan plan_body(struct lws *wsi, const char *method)
{
    char length[24];
    int post = strcmp(method, "POST") == 0;
    if (lws_hdr_copy(wsi, length, sizeof length, WSI_TOKEN_HTTP_CONTENT_LENGTH) > 0)
        return post || atoll(length) > 0 ? BODY_READ : BODY_NONE;
    return post || strcmp(method, "PUT") == 0 || strcmp(method, "PATCH") == 0 ? BODY_UNFRAMED
                                                                              : BODY_NONE;
}

static void append_body(http_request *req, const void *in, size_t len)
{
    if (req->body_too_large || len == 0)
        return;
    if (req->body_len + len > HTTP_BODY_MAX) {
        req->body_too_large = 1;
        free(req->body);
        req->body = NULL;
        req->body_len = 0;
        return;
    }
    char *body = realloc(req->body, req->body_len + len + 1);
    if (!body)
        abort();
    memcpy(body + req->body_len, in, len);
    req->body_len += len;
    body[req->body_len] = '\0';
    req->body = body;
}

static const char *reason_phrase(int status)
{
    static const struct {
        int status;
        const char *text;
    } reasons[] = {
        {200, "OK"},
        {201, "Created"},
        {204, "No Content"},
        {400, "Bad Request"},
        {401, "Unauthorized"},
        {403, "Forbidden"},
        {404, "Not Found"},
        {405, "Method Not Allowed"},
        {408, "Request Timeout"},
        {409, "Conflict"},
        {413, "Payload Too Large"},
        {422, "Unprocessable Entity"},
        {429, "Too Many Requests"},
        {500, "Internal Server Error"},
        {502, "Bad Gateway"},
        {503, "Service Unavailable"},
        {504, "Gateway Timeout"},
    };
    for (size_t i = 0; i < sizeof reasons / sizeof *reasons; i++)
        if (reasons[i].status == status)
            return reasons[i].text;
    return status < 400 ? "OK" : "Error";
}

/* Our own status line, not lws_add_http_header_status: for an upgrade lws
 * has not parsed the request's version yet and writes HTTP/1.0, which
 * strict WebSocket clients (Python websockets) refuse as "not a valid
 * HTTP response"; and lws knows no reason phrase for 201, 422 or 429. */
static int add_status_line(struct lws *wsi, int status, unsigned char **p, unsigned char *end)
{
    char line[64];
    int n = snprintf(line, sizeof line, "HTTP/1.1 %d %s", status, reason_phrase(status));
    return lws_add_http_header_by_name(wsi, NULL, (const unsigned char *)line, n, p, end);
}

/* Headers and body in one write, as lws itself does for h1 status pages.
 * lws keeps whatever the kernel does not take and sends it later. */
static int write_response(struct lws *wsi, const http_response *resp, int close_after)
{
    size_t body_len = resp->body ? strlen(resp->body) : 0;
    unsigned char *buf = must_calloc(1, LWS_PRE + HTTP_HEADER_ROOM + body_len);
    unsigned char *start = buf + LWS_PRE, *p = start, *end = start + HTTP_HEADER_ROOM;
    char number[24];
    int failed = add_status_line(wsi, resp->status, &p, end);
    if (!failed && resp->body) {
        int n = snprintf(number, sizeof number, "%zu", body_len);
        failed =
            lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE,
                                         (const unsigned char *)"application/json", 16, &p, end) ||
            lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH,
                                         (const unsigned char *)number, n, &p, end);
    } else if (!failed && resp->status != 204) {
        failed = lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH,
                                              (const unsigned char *)"0", 1, &p, end);
    }
    if (!failed && close_after)
        failed = lws_add_http_header_by_token(wsi, WSI_TOKEN_CONNECTION,
                                              (const unsigned char *)"close", 5, &p, end);
    if (!failed && resp->retry_after > 0) {
        int n = snprintf(number, sizeof number, "%d", resp->retry_after);
        failed = lws_add_http_header_by_name(
            wsi, (const unsigned char *)"retry-after:", (const unsigned char *)number, n, &p, end);
    }
    if (!failed)
        failed = lws_finalize_http_header(wsi, &p, end);
    if (!failed) {
        memcpy(p, resp->body ? resp->body : "", body_len);
        int n = (int)(p - start) + (int)body_len;
        failed = lws_write(wsi, start, (size_t)n, LWS_WRITE_HTTP_FINAL) != n;
    }
    free(buf);
    return failed ? -1 : 0;
}

static void dispatch(struct lws *wsi, http_exchange *ex)
{
    const http_site *site = site_of(wsi);
    site->route(site->app, &ex->req, &ex->resp);
    if (ex->resp.status == 0)
        http_answer(&ex->resp, 500, NULL); /* a route that forgot to answer */
    if (site->answered)
        site->answered(site->app, ex->req.method, ex->req.path, ex->resp.status);
    if (ex->resp.delay_ms > 0) {
        ex->state = EXCHANGE_DELAYED;
        lws_set_timer_usecs(wsi, (lws_usec_t)ex->resp.delay_ms * 1000);
    } else {
        ex->state = EXCHANGE_READY;
        lws_callback_on_writable(wsi);
    }
}

static int begin_request(struct lws *wsi, http_exchange *ex, const char *path)
{
    exchange_reset(ex);
    http_request *req = &ex->req;
    snprintf(req->method, sizeof req->method, "%s", method_of(wsi));
    snprintf(req->path, sizeof req->path, "%s", path ? path : "/");
    read_api_key(wsi, req);
    read_params(wsi, req);
    body_plan plan = plan_body(wsi, req->method);
    ex->close_after = plan == BODY_UNFRAMED;
    if (plan == BODY_READ)
        ex->state = EXCHANGE_READING;
    else
        dispatch(wsi, ex);
    return 0;
}

static int finish_request(struct lws *wsi, http_exchange *ex)
{
    if (ex->state != EXCHANGE_READY)
        return 0; /* a spurious writeable: nothing to say yet */
    void (*after)(void *) = ex->resp.after;
    int close_after = ex->close_after;
    int rc = write_response(wsi, &ex->resp, close_after);
    exchange_reset(ex);
    if (after)
        after(site_of(wsi)->app);
    if (rc != 0 || close_after)
        return -1;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

int http_confirm_upgrade(struct lws *wsi, const char *what)
{
    const http_site *site = site_of(wsi);
    char path[HTTP_PATH_MAX] = "";
    lws_hdr_copy(wsi, path, sizeof path, WSI_TOKEN_GET_URI);
    http_response reject = {0};
    int refused = strcmp(what, "websocket") != 0;
    if (refused || !site->upgrade)
        http_answer(&reject, 404, NULL);
    else
        refused = site->upgrade(site->app, wsi, &reject);
    if (site->answered)
        site->answered(site->app, "GET", path, refused ? reject.status : 101);
    if (!refused)
        return 0;
    int rc = write_response(wsi, &reject, 0);
    free(reject.body);
    return rc ? -1 : 1; /* >0: lws completes the transaction itself */
}

int http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                  size_t len)
{
    http_exchange *ex = user;
    const http_site *site;

    switch (reason) {
    case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
        site = site_of(wsi);
        return site && site->refuse && site->refuse(site->app);
    case LWS_CALLBACK_HTTP: return begin_request(wsi, ex, in);
    case LWS_CALLBACK_HTTP_BODY:
        if (ex->state == EXCHANGE_READING)
            append_body(&ex->req, in, len);
        return 0;
    case LWS_CALLBACK_HTTP_BODY_COMPLETION:
        if (ex->state == EXCHANGE_READING)
            dispatch(wsi, ex);
        return 0;
    case LWS_CALLBACK_TIMER:
        if (ex && ex->state == EXCHANGE_DELAYED) {
            ex->state = EXCHANGE_READY;
            lws_callback_on_writable(wsi);
        }
        return 0;
    case LWS_CALLBACK_HTTP_WRITEABLE: return finish_request(wsi, ex);
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: return http_confirm_upgrade(wsi, in ? in : "");
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
    case LWS_CALLBACK_CLOSED_HTTP:
        if (ex)
            exchange_reset(ex);
        return 0;
    default: return lws_callback_http_dummy(wsi, reason, user, in, len);
    }
}
