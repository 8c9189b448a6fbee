/* http: one HTTP request in, one JSON answer out, on top of libwebsockets.
 *
 * Each listening vhost carries an http_site as its user pointer (the API
 * port and the control port have different ones); http_callback is the
 * protocols[0] callback of both. It gathers a request (method, path,
 * query, the X-API-Key header, the body), hands it to the site's route,
 * and writes the answer from the writeable callback, after an lws timer
 * when the answer asks for a delay, so a slow answer never blocks the loop.
 *
 * The site also decides, per new TCP connection, whether to hang up at
 * once (the refuse fault), and per WebSocket upgrade whether to let it
 * through; a rejected upgrade is answered with the rejection's status and
 * body. This module knows HTTP only: envelopes and meaning live in the
 * routes.
 */
#ifndef FAKE_BAND_HTTP_H
#define FAKE_BAND_HTTP_H

#include <libwebsockets.h>
#include <stddef.h>

#include "ident.h"

#define HTTP_PATH_MAX 512
#define HTTP_PARAMS_MAX 16
#define HTTP_BODY_MAX (1024 * 1024)

typedef struct http_param {
    char name[32];
    char value[256];
} http_param;

typedef struct http_request {
    char method[8];             /* "GET", "POST", "DELETE", ... */
    char path[HTTP_PATH_MAX];   /* decoded, without the query */
    char api_key[IDENT_KEY_SZ]; /* X-API-Key, the one header routes read */
    http_param params[HTTP_PARAMS_MAX];
    int nparams;
    char *body; /* NUL-terminated; NULL when none came */
    size_t body_len;
    int body_too_large; /* the body passed HTTP_BODY_MAX; not kept */
} http_request;

typedef struct http_response {
    int status;               /* 0 until a route answers */
    char *body;               /* malloc'd JSON text; NULL = no body */
    int retry_after;          /* seconds; > 0 adds a Retry-After header */
    int delay_ms;             /* hold the answer this long */
    void (*after)(void *app); /* run once the answer is written */
} http_response;

typedef struct http_site {
    void *app;
    void (*route)(void *app, const http_request *req, http_response *resp);
    /* Nonzero: hang up on this new connection right after accept. NULL = never. */
    int (*refuse)(void *app);
    /* 0 lets a WebSocket upgrade through; nonzero rejects it with *reject.
     * NULL = this site has no WebSockets (404). */
    int (*upgrade)(void *app, struct lws *wsi, http_response *reject);
    /* Told of every answer written, for the request log. May be NULL. */
    void (*answered)(void *app, const char *method, const char *path, int status);
} http_site;

/* The value of query parameter `name` (decoded), or NULL. */
const char *http_param_get(const http_request *req, const char *name);

/* The decoded value of query parameter `name` of the request on `wsi`
 * (headers still at hand), copied into out; NULL when absent or longer
 * than cap. Unlike lws_get_urlarg_by_name, a long parameter before it
 * does not hide it. */
const char *http_url_arg(struct lws *wsi, const char *name, char *out, size_t cap);

/* Sets status and takes ownership of `body` (may be NULL). */
void http_answer(http_response *resp, int status, char *body);

/* The per-session allocation http_callback needs (protocols[0] size). */
size_t http_session_size(void);

int http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                  size_t len);

/* The answer to LWS_CALLBACK_HTTP_CONFIRM_UPGRADE (`what` is the `in` of
 * that callback). lws asks whichever protocol the connection is bound to,
 * and binds new connections to the vhost's default protocol (the
 * WebSocket one), so that protocol must forward the question here. */
int http_confirm_upgrade(struct lws *wsi, const char *what);

#endif
