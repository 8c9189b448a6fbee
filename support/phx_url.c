#include "phx_url.h"

#include "config.h"
#include "url.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* An append-only string written in two passes: with s == NULL it only
 * counts, so the second pass gets a buffer of exactly the right size. */
typedef struct strbuf {
    char *s;
    size_t len;
} strbuf;

static void put(strbuf *b, const char *s, size_t n)
{
    if (b->s)
        memcpy(b->s + b->len, s, n);
    b->len += n;
}

static void put_str(strbuf *b, const char *s)
{
    put(b, s, strlen(s));
}

static void put_encoded(strbuf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                    (*p >= '0' && *p <= '9') || strchr("-._~", *p);
        char esc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
        if (plain)
            put(b, (const char *)p, 1);
        else
            put(b, esc, 3);
    }
}

/* host[:port] or [v6][:port]; no userinfo (a key belongs in api_key). */
static int parse_authority(const char *a, size_t n, phx_endpoint *ep)
{
    const char *host = a, *colon;
    size_t host_len;
    if (n && a[0] == '[') {
        const char *close = memchr(a, ']', n);
        if (!close)
            return -1;
        host = a + 1;
        host_len = (size_t)(close - host);
        colon = close + 1 < a + n ? close + 1 : NULL;
        if (colon && *colon != ':')
            return -1;
    } else {
        colon = memchr(a, ':', n);
        host_len = (size_t)((colon ? colon : a + n) - a);
    }
    if (host_len == 0 || host_len >= sizeof ep->host || memchr(host, '@', host_len))
        return -1;
    for (size_t i = 0; i < host_len; i++)
        if ((unsigned char)host[i] <= ' ')
            return -1;
    memcpy(ep->host, host, host_len);
    ep->host[host_len] = '\0';
    ep->port = ep->tls ? 443 : 80;
    return colon ? url_parse_port(colon + 1, (size_t)(a + n - colon - 1), &ep->port) : 0;
}

/* Copies the query's parameters except api_key and vsn, each followed by
 * '&'; the caller appends its own after them. */
static void put_kept_params(strbuf *b, const char *q, size_t n)
{
    const char *end = q + n;
    while (q < end) {
        const char *amp = memchr(q, '&', (size_t)(end - q));
        const char *stop = amp ? amp : end;
        const char *eq = memchr(q, '=', (size_t)(stop - q));
        size_t name_len = (size_t)((eq ? eq : stop) - q);
        int drop = (name_len == 7 && strncmp(q, "api_key", 7) == 0) ||
                   (name_len == 3 && strncmp(q, "vsn", 3) == 0) || stop == q;
        if (!drop) {
            put(b, q, (size_t)(stop - q));
            put(b, "&", 1);
        }
        q = stop + 1;
    }
}

/* What the request target is made of, pointing into the caller's text. */
typedef struct url_parts {
    const char *path;
    size_t path_len;
    const char *query; /* NULL when the URL has none */
    size_t query_len;
    const char *api_key;
    const char *agent_id; /* "" for a user connection */
} url_parts;

static void put_target(strbuf *b, const url_parts *u)
{
    if (u->path_len)
        put(b, u->path, u->path_len);
    else
        put_str(b, "/");
    put_str(b, "?");
    if (u->query)
        put_kept_params(b, u->query, u->query_len);
    put_str(b, "api_key=");
    put_encoded(b, u->api_key);
    put_str(b, "&vsn=2.0.0");
    if (*u->agent_id) {
        put_str(b, "&agent_id=");
        put_encoded(b, u->agent_id);
    }
}

err_code phx_url_build(const char *ws_url, const char *api_key, const char *agent_id,
                       phx_endpoint *out, char *err)
{
    if (!out)
        return err_set(err, ERR_USAGE, "phx_url_build: NULL endpoint");
    memset(out, 0, sizeof *out);
    if (!ws_url || !*ws_url || !api_key || !*api_key)
        return err_set(err, ERR_USAGE, "phx_url_build: ws_url and api_key are required");
    /* the guard's own judge, so preflight and this client agree */
    if (config_url_usable(ws_url, CONFIG_URL_WS, "the WebSocket URL", err) != ERR_OK)
        return ERR_CONFIG;
    const char *rest;
    if (strncasecmp(ws_url, "wss://", 6) == 0) {
        out->tls = 1;
        rest = ws_url + 6;
    } else if (strncasecmp(ws_url, "ws://", 5) == 0) {
        rest = ws_url + 5;
    } else {
        return err_set(err, ERR_CONFIG, "WebSocket URL must start with ws:// or wss://");
    }
    size_t auth_len = strcspn(rest, "/?#");
    if (parse_authority(rest, auth_len, out) != 0)
        return err_set(err, ERR_CONFIG, "WebSocket URL has no usable host or port");
    const char *path = rest + auth_len;
    size_t path_len = strcspn(path, "?#");
    const char *query = path[path_len] == '?' ? path + path_len + 1 : NULL;
    size_t query_len = query ? strcspn(query, "#") : 0;
    url_parts parts = {path, path_len, query, query_len, api_key, agent_id ? agent_id : ""};
    strbuf b = {NULL, 0};
    put_target(&b, &parts);
    if (!(b.s = malloc(b.len + 1)))
        return err_set(err, ERR_NOMEM, "out of memory building the WebSocket URL");
    b.len = 0;
    put_target(&b, &parts);
    b.s[b.len] = '\0';
    out->path = b.s;
    return ERR_OK;
}

void phx_endpoint_clear(phx_endpoint *ep)
{
    if (!ep)
        return;
    if (ep->path) {
        /* volatile so the wipe of a soon-freed buffer is not optimised out */
        for (volatile char *p = ep->path; *p; p++)
            *p = '\0';
        free(ep->path);
    }
    memset(ep, 0, sizeof *ep);
}
