/* proxy: see proxy.h. One state machine per client connection:
 *
 *   HEAD --CONNECT allowed--> DIAL --connected--> TUNNEL
 *     |  --plain allowed----> DIAL --connected--> TUNNEL (rewritten request first)
 *     |  --CONNECT denied---> DENIED --inner request--> LINGER (403)
 *     +  --plain denied, bad request, dial failed-----> LINGER (403/400/502)
 *
 * LINGER flushes the answer, half-closes, and drains the client until it
 * closes too, so the answer is not lost to a reset. */
#include "proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF_SZ 16384
#define HEAD_MAX 8192
#define HEAD_WAIT_MS 10000  /* a client must send its request by then */
#define DIAL_WAIT_MS 10000
#define DENY_WAIT_MS 5000   /* a denied tunnel whose client never speaks */
#define DENY_SETTLE_MS 300  /* after the first inner bytes, e.g. a TLS hello */
#define LINGER_MS 2000

static const char connect_ok[] = "HTTP/1.0 200 OK\r\n\r\n";
static const char bad_request[] =
    "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
static const char bad_gateway[] =
    "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

enum conn_state { ST_HEAD, ST_DIAL, ST_TUNNEL, ST_DENIED, ST_LINGER };

typedef struct pbuf {
    char data[BUF_SZ];
    size_t len;
} pbuf;

typedef struct conn {
    int cfd, ufd;       /* client, upstream (-1 until dialled) */
    enum conn_state st;
    int64_t deadline;   /* 0 = none */
    int dead;
    char sandbox[128];
    char host[256];
    int port;
    int is_connect;
    int resp_head;      /* plain HTTP: the answer's head is still being read */
    pol_verdict v;
    char head[HEAD_MAX]; /* the request head; in DENIED, the inner request */
    size_t head_len;
    pbuf up, down;      /* bytes waiting for upstream / for the client */
    int c_eof, u_eof;   /* their sending side has ended */
    int c_shut, u_shut; /* we have ended sending to them */
    short cev, uev;     /* what was asked of poll */
    int ci, ui;         /* their slots in the pollfd array, -1 = none */
} conn;

struct proxy {
    proxy_hooks hooks;
    conn *c[PROXY_MAX_CONNS];
    size_t n;
};

/* ---- plumbing ---- */

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
}

static int queue(pbuf *b, const char *data, size_t n)
{
    if (n > BUF_SZ - b->len)
        return -1;
    memcpy(b->data + b->len, data, n);
    b->len += n;
    return 0;
}

/* Writes what b holds to fd. -1 when the peer is gone. */
static int flush(pbuf *b, int fd)
{
    if (b->len == 0)
        return 0;
    ssize_t w = write(fd, b->data, b->len);
    if (w < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    memmove(b->data, b->data + w, b->len - (size_t)w);
    b->len -= (size_t)w;
    return 0;
}

static const char *find_crlf2(const char *s, size_t n)
{
    for (size_t i = 0; i + 3 < n; i++)
        if (s[i] == '\r' && s[i + 1] == '\n' && s[i + 2] == '\r' && s[i + 3] == '\n')
            return s + i;
    return NULL;
}

static void linger(conn *c, const char *answer, size_t n, int64_t now)
{
    queue(&c->down, answer, n);
    c->st = ST_LINGER;
    c->deadline = now + LINGER_MS;
}

static void record(proxy *p, const conn *c)
{
    if (p->hooks.record)
        p->hooks.record(p->hooks.ud, c->sandbox, c->host, c->port,
                        c->is_connect ? "forward-bypass" : "forward", &c->v);
}

static void answer_403(conn *c, int64_t now)
{
    char body[700], head[256];
    int blen = snprintf(body, sizeof body, "Blocked by network policy: domain %s:%d\ndetail: %s\n",
                        c->host, c->port, c->v.detail);
    if (blen < 0 || (size_t)blen >= sizeof body)
        blen = (int)strlen(body);
    int hlen = snprintf(head, sizeof head,
                        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\n"
                        "Content-Length: %d\r\nConnection: close\r\n\r\n",
                        blen);
    queue(&c->down, head, (size_t)hlen);
    linger(c, body, (size_t)blen, now);
}

/* ---- request parsing ---- */

/* "host:port" or "[v6]:port" (len bytes) into c->host and c->port. */
static int parse_authority(conn *c, const char *s, size_t len, int default_port)
{
    const char *host = s, *port = NULL;
    size_t hlen = len;
    if (len > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close)
            return -1;
        host = s + 1;
        hlen = (size_t)(close - host);
        if ((size_t)(close + 1 - s) < len && close[1] == ':')
            port = close + 2;
    } else {
        const char *colon = memchr(s, ':', len);
        if (colon) {
            hlen = (size_t)(colon - s);
            port = colon + 1;
        }
    }
    if (hlen == 0 || hlen >= sizeof c->host)
        return -1;
    memcpy(c->host, host, hlen);
    c->host[hlen] = '\0';
    c->port = default_port;
    if (port) {
        char digits[8];
        size_t plen = (size_t)(s + len - port);
        if (plen == 0 || plen >= sizeof digits)
            return -1;
        memcpy(digits, port, plen);
        digits[plen] = '\0';
        char *end;
        long v = strtol(digits, &end, 10);
        if (*end || v <= 0 || v > 65535)
            return -1;
        c->port = (int)v;
    }
    return 0;
}

/* Hop-by-hop headers the proxy consumes instead of forwarding. */
static int hop_header(const char *line, size_t n)
{
    static const char *const names[] = {"Connection:", "Proxy-Connection:", "Keep-Alive:",
                                        "Proxy-Authorization:", NULL};
    for (size_t i = 0; names[i]; i++) {
        size_t k = strlen(names[i]);
        if (n >= k && strncasecmp(line, names[i], k) == 0)
            return 1;
    }
    return 0;
}

/* The plain-HTTP request in origin form, with `Connection: close`, into
 * c->up: the request line, the end-to-end headers, then any body bytes
 * that came with the head. */
static int rewrite_plain(conn *c, const char *method, const char *path, size_t path_len,
                         const char *version, const char *headers, const char *end)
{
    char line[HEAD_MAX];
    int n = snprintf(line, sizeof line, "%s %.*s %s\r\n", method, (int)path_len, path, version);
    if (n < 0 || (size_t)n >= sizeof line || queue(&c->up, line, (size_t)n) != 0)
        return -1;
    const char *hdr_end = end + 2; /* the last header line's CRLF */
    for (const char *h = headers; h < hdr_end;) {
        const char *nl = memchr(h, '\n', (size_t)(hdr_end - h));
        size_t len = nl ? (size_t)(nl + 1 - h) : (size_t)(hdr_end - h);
        if (!hop_header(h, len) && queue(&c->up, h, len) != 0)
            return -1;
        h += len;
    }
    static const char close_hdr[] = "Connection: close\r\n\r\n";
    if (queue(&c->up, close_hdr, sizeof close_hdr - 1) != 0)
        return -1;
    const char *body = end + 4;
    size_t body_len = (size_t)(c->head + c->head_len - body);
    return queue(&c->up, body, body_len);
}

/* ---- dialling ---- */

static int dial(conn *c)
{
    char port[8];
    snprintf(port, sizeof port, "%d", c->port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    if (getaddrinfo(c->host, port, &hints, &res) != 0 || !res)
        return -1;
    int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
    int rc = -1;
    if (fd >= 0) {
        set_nonblock(fd);
        rc = connect(fd, res->ai_addr, res->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS)
            rc = 0;
    }
    freeaddrinfo(res);
    if (rc != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    c->ufd = fd;
    return 0;
}

static void dial_failed(proxy *p, conn *c, int64_t now)
{
    snprintf(c->v.rule, sizeof c->v.rule, "<dial failed>");
    record(p, c);
    linger(c, bad_gateway, sizeof bad_gateway - 1, now);
}

static void start_dial(proxy *p, conn *c, int64_t now)
{
    if (dial(c) != 0) {
        dial_failed(p, c, now);
        return;
    }
    c->st = ST_DIAL;
    c->deadline = now + DIAL_WAIT_MS;
}

static void dial_done(proxy *p, conn *c, int64_t now)
{
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr != 0) {
        dial_failed(p, c, now);
        return;
    }
    if (c->is_connect)
        queue(&c->down, connect_ok, sizeof connect_ok - 1);
    c->st = ST_TUNNEL;
    c->deadline = 0;
    record(p, c);
}

/* ---- the request head ---- */

/* Bytes that came after a CONNECT head belong to the tunnel. */
static void keep_tail(conn *c, const char *end, int into_head)
{
    const char *tail = end + 4;
    size_t n = (size_t)(c->head + c->head_len - tail);
    if (into_head) {
        memmove(c->head, tail, n);
        c->head_len = n;
    } else {
        queue(&c->up, tail, n);
        c->head_len = 0;
    }
}

static void deny_settle(conn *c, int64_t now)
{
    if (find_crlf2(c->head, c->head_len) || c->head_len == sizeof c->head)
        answer_403(c, now);
    else if (c->head_len > 0 && c->deadline > now + DENY_SETTLE_MS)
        c->deadline = now + DENY_SETTLE_MS;
}

static void on_head(proxy *p, conn *c, const char *end, int64_t now)
{
    char method[16], target[4096], version[16];
    const char *eol = memchr(c->head, '\r', (size_t)(end - c->head) + 1);
    size_t llen = (size_t)(eol - c->head);
    char line[HEAD_MAX];
    memcpy(line, c->head, llen);
    line[llen] = '\0';
    if (sscanf(line, "%15s %4095s %15s", method, target, version) != 3) {
        linger(c, bad_request, sizeof bad_request - 1, now);
        return;
    }
    c->is_connect = strcmp(method, "CONNECT") == 0;
    const char *path = NULL;
    size_t auth_len = strlen(target);
    const char *auth = target;
    if (!c->is_connect) {
        if (strncasecmp(target, "http://", 7) != 0) {
            linger(c, bad_request, sizeof bad_request - 1, now);
            return;
        }
        auth = target + 7;
        path = strchr(auth, '/');
        auth_len = path ? (size_t)(path - auth) : strlen(auth);
    }
    if (parse_authority(c, auth, auth_len, c->is_connect ? 443 : 80) != 0) {
        linger(c, bad_request, sizeof bad_request - 1, now);
        return;
    }
    p->hooks.decide(p->hooks.ud, c->sandbox, c->host, c->port, &c->v);
    if (c->is_connect && c->v.allowed) {
        keep_tail(c, end, 0);
        start_dial(p, c, now);
    } else if (c->is_connect) {
        record(p, c);
        queue(&c->down, connect_ok, sizeof connect_ok - 1);
        keep_tail(c, end, 1);
        c->st = ST_DENIED;
        c->deadline = now + DENY_WAIT_MS;
        deny_settle(c, now);
    } else if (c->v.allowed) {
        const char *p_path = path ? path : "/";
        if (rewrite_plain(c, method, p_path, strlen(p_path), version, eol + 2, end) != 0) {
            linger(c, bad_request, sizeof bad_request - 1, now);
            return;
        }
        c->head_len = 0;
        c->resp_head = 1;
        start_dial(p, c, now);
    } else {
        record(p, c);
        answer_403(c, now);
    }
}

/* ---- per-state events ---- */

/* Reads from the client into the head buffer. -1 at EOF or error. */
static int read_head(conn *c)
{
    size_t room = sizeof c->head - c->head_len;
    if (room == 0)
        return 0;
    ssize_t n = read(c->cfd, c->head + c->head_len, room);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    if (n == 0)
        return -1;
    c->head_len += (size_t)n;
    return 0;
}

static void step_head(proxy *p, conn *c, int64_t now)
{
    if (read_head(c) != 0) {
        c->dead = 1;
        return;
    }
    const char *end = find_crlf2(c->head, c->head_len);
    if (end)
        on_head(p, c, end, now);
    else if (c->head_len == sizeof c->head)
        linger(c, bad_request, sizeof bad_request - 1, now);
}

static void step_denied(conn *c, int64_t now)
{
    if (flush(&c->down, c->cfd) != 0) {
        c->dead = 1;
        return;
    }
    if (read_head(c) != 0) {
        if (c->head_len > 0)
            answer_403(c, now);
        else
            c->dead = 1;
        return;
    }
    deny_settle(c, now);
}

static void step_linger(conn *c, int64_t now)
{
    if (flush(&c->down, c->cfd) != 0) {
        c->dead = 1;
        return;
    }
    if (c->down.len == 0 && !c->c_shut) {
        shutdown(c->cfd, SHUT_WR);
        c->c_shut = 1;
        c->deadline = now + LINGER_MS;
    }
    char sink[4096];
    ssize_t n = read(c->cfd, sink, sizeof sink);
    int gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
    if (gone && c->down.len == 0)
        c->dead = 1;
}

/* Moves bytes one way: from `from` into b, and from b to `to`. */
static int pump(int from, int to, pbuf *b, int *from_eof, int *to_shut)
{
    if (!*from_eof && b->len == 0) {
        ssize_t n = read(from, b->data, sizeof b->data);
        if (n == 0)
            *from_eof = 1;
        else if (n > 0)
            b->len = (size_t)n;
        else if (errno != EAGAIN && errno != EINTR)
            return -1;
    }
    if (flush(b, to) != 0)
        return -1;
    if (*from_eof && b->len == 0 && !*to_shut) {
        shutdown(to, SHUT_WR);
        *to_shut = 1;
    }
    return 0;
}

/* The upstream's answer to a plain request, its head rewritten: the
 * hop-by-hop headers dropped and `Connection: close` added, so a pooling
 * client knows this connection ends with the answer and does not send a
 * second request into it. The head collects in c->head (free after the
 * request went out). Once written, the rest is pumped as is. */
static int read_resp_head(conn *c)
{
    size_t room = sizeof c->head - c->head_len;
    ssize_t n = room ? read(c->ufd, c->head + c->head_len, room) : 0;
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    if (n == 0)
        c->u_eof = 1;
    c->head_len += (size_t)n;
    const char *end = find_crlf2(c->head, c->head_len);
    if (!end && !c->u_eof && c->head_len < sizeof c->head)
        return 0;
    c->resp_head = 0;
    if (!end) /* no head at all: pass on what came */
        return queue(&c->down, c->head, c->head_len);
    const char *hdr_end = end + 2;
    for (const char *h = c->head; h < hdr_end;) {
        const char *nl = memchr(h, '\n', (size_t)(hdr_end - h));
        size_t len = nl ? (size_t)(nl + 1 - h) : (size_t)(hdr_end - h);
        if ((h == c->head || !hop_header(h, len)) && queue(&c->down, h, len) != 0)
            return -1;
        h += len;
    }
    static const char close_hdr[] = "Connection: close\r\n\r\n";
    const char *body = end + 4;
    if (queue(&c->down, close_hdr, sizeof close_hdr - 1) != 0 ||
        queue(&c->down, body, (size_t)(c->head + c->head_len - body)) != 0)
        return -1;
    c->head_len = 0;
    return 0;
}

static void step_tunnel(conn *c)
{
    if (c->resp_head && c->down.len == 0 && read_resp_head(c) != 0) {
        c->dead = 1;
        return;
    }
    if (c->resp_head) {
        if (pump(c->cfd, c->ufd, &c->up, &c->c_eof, &c->u_shut) != 0)
            c->dead = 1;
        return;
    }
    if (pump(c->cfd, c->ufd, &c->up, &c->c_eof, &c->u_shut) != 0 ||
        pump(c->ufd, c->cfd, &c->down, &c->u_eof, &c->c_shut) != 0 ||
        (c->c_eof && c->u_eof && c->up.len == 0 && c->down.len == 0))
        c->dead = 1;
}

static void step_deadline(proxy *p, conn *c, int64_t now)
{
    if (!c->deadline || now < c->deadline)
        return;
    if (c->st == ST_DIAL)
        dial_failed(p, c, now);
    else if (c->st == ST_DENIED && c->head_len > 0)
        answer_403(c, now);
    else
        c->dead = 1;
}

/* ---- the table ---- */

proxy *proxy_new(const proxy_hooks *hooks)
{
    proxy *p = calloc(1, sizeof *p);
    if (p)
        p->hooks = *hooks;
    return p;
}

static void conn_free(conn *c)
{
    if (c->cfd >= 0)
        close(c->cfd);
    if (c->ufd >= 0)
        close(c->ufd);
    free(c);
}

static void compact(proxy *p)
{
    size_t k = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (p->c[i]->dead)
            conn_free(p->c[i]);
        else
            p->c[k++] = p->c[i];
    }
    p->n = k;
}

void proxy_free(proxy *p)
{
    if (!p)
        return;
    proxy_drop_all(p);
    free(p);
}

void proxy_accept(proxy *p, int fd, const char *sandbox, int64_t now)
{
    conn *c = p->n < PROXY_MAX_CONNS ? calloc(1, sizeof *c) : NULL;
    if (!c) {
        close(fd);
        return;
    }
    set_nonblock(fd);
    c->cfd = fd;
    c->ufd = -1;
    c->st = ST_HEAD;
    c->deadline = now + HEAD_WAIT_MS;
    snprintf(c->sandbox, sizeof c->sandbox, "%s", sandbox);
    p->c[p->n++] = c;
}

/* What each state waits for. */
static void interests(const conn *c, short *cev, short *uev)
{
    *cev = *uev = 0;
    switch (c->st) {
    case ST_HEAD:
        *cev = POLLIN;
        break;
    case ST_DIAL:
        *uev = POLLOUT;
        break;
    case ST_TUNNEL:
        *cev = (short)((!c->c_eof && c->up.len == 0 ? POLLIN : 0) | (c->down.len ? POLLOUT : 0));
        *uev = (short)((!c->u_eof && c->down.len == 0 ? POLLIN : 0) | (c->up.len ? POLLOUT : 0));
        break;
    case ST_DENIED:
    case ST_LINGER:
        *cev = (short)(POLLIN | (c->down.len ? POLLOUT : 0));
        break;
    }
}

size_t proxy_pollfds(proxy *p, struct pollfd *fds)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n; i++) {
        conn *c = p->c[i];
        interests(c, &c->cev, &c->uev);
        c->ci = c->ui = -1;
        if (c->cev) {
            c->ci = (int)n;
            fds[n++] = (struct pollfd){c->cfd, c->cev, 0};
        }
        if (c->uev && c->ufd >= 0) {
            c->ui = (int)n;
            fds[n++] = (struct pollfd){c->ufd, c->uev, 0};
        }
    }
    return n;
}

static short revents_of(const struct pollfd *fds, size_t n, int slot)
{
    return slot >= 0 && (size_t)slot < n ? fds[slot].revents : 0;
}

void proxy_step(proxy *p, const struct pollfd *fds, size_t n, int64_t now)
{
    for (size_t i = 0; i < p->n; i++) {
        conn *c = p->c[i];
        int ready = revents_of(fds, n, c->ci) || revents_of(fds, n, c->ui);
        if (ready) {
            switch (c->st) {
            case ST_HEAD: step_head(p, c, now); break;
            case ST_DIAL: dial_done(p, c, now); break;
            case ST_TUNNEL: step_tunnel(c); break;
            case ST_DENIED: step_denied(c, now); break;
            case ST_LINGER: step_linger(c, now); break;
            }
        }
        if (!c->dead)
            step_deadline(p, c, now);
    }
    compact(p);
}

void proxy_drop_all(proxy *p)
{
    for (size_t i = 0; i < p->n; i++)
        p->c[i]->dead = 1;
    compact(p);
}

void proxy_drop_sandbox(proxy *p, const char *sandbox)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->c[i]->sandbox, sandbox) == 0)
            p->c[i]->dead = 1;
    compact(p);
}

size_t proxy_count(const proxy *p)
{
    return p->n;
}
