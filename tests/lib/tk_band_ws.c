#include "tk_band_ws.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0 /* not on macOS: there a write to a closed peer may raise SIGPIPE */
#endif

#define HANDSHAKE_TIMEOUT_MS 5000
#define HEADER_MAX 8192

typedef struct backlog_item {
    struct backlog_item *next;
    char *text;
} backlog_item;

struct tk_ws {
    int fd;
    unsigned char *rx; /* bytes read and not yet parsed */
    size_t rx_len;
    char *msg; /* the fragmented message being assembled */
    size_t msg_len;
    int msg_is_text;
    int closed;
    int close_code; /* TK_WS_NO_CLOSE_FRAME until a close frame comes */
    char close_reason[128];
    backlog_item *backlog;
    unsigned next_ref;
};

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int write_all(int fd, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads what is there within the deadline into ws->rx. 1 = got bytes,
 * 0 = timeout, -1 = the connection ended. */
static int fill(tk_ws *ws, long deadline)
{
    long left = deadline - now_ms();
    struct pollfd p = {.fd = ws->fd, .events = POLLIN};
    if (left <= 0)
        return 0;
    int r = poll(&p, 1, (int)left);
    if (r == 0)
        return 0;
    if (r < 0)
        return errno == EINTR ? 0 : -1;
    unsigned char buf[16384];
    ssize_t n = recv(ws->fd, buf, sizeof buf, 0);
    if (n <= 0)
        return -1;
    unsigned char *rx = realloc(ws->rx, ws->rx_len + (size_t)n);
    if (!rx)
        abort();
    memcpy(rx + ws->rx_len, buf, (size_t)n);
    ws->rx = rx;
    ws->rx_len += (size_t)n;
    return 1;
}

static void consume(tk_ws *ws, size_t n)
{
    memmove(ws->rx, ws->rx + n, ws->rx_len - n);
    ws->rx_len -= n;
}

static int send_frame(tk_ws *ws, int opcode, const void *data, size_t len)
{
    unsigned char head[14];
    size_t h = 0;
    head[h++] = (unsigned char)(0x80 | opcode);
    if (len < 126) {
        head[h++] = (unsigned char)(0x80 | len);
    } else if (len < 65536) {
        head[h++] = 0x80 | 126;
        head[h++] = (unsigned char)(len >> 8);
        head[h++] = (unsigned char)len;
    } else {
        head[h++] = 0x80 | 127;
        for (int i = 7; i >= 0; i--)
            head[h++] = (unsigned char)((uint64_t)len >> (8 * i));
    }
    const unsigned char mask[4] = {0x12, 0x34, 0x56, 0x78};
    memcpy(head + h, mask, 4);
    h += 4;
    unsigned char *body = malloc(len ? len : 1);
    if (!body)
        abort();
    for (size_t i = 0; i < len; i++)
        body[i] = ((const unsigned char *)data)[i] ^ mask[i % 4];
    int rc = write_all(ws->fd, head, h) || write_all(ws->fd, body, len) ? -1 : 0;
    free(body);
    return rc;
}

static void on_close_frame(tk_ws *ws, const unsigned char *p, size_t len)
{
    ws->closed = 1;
    ws->close_code = len >= 2 ? (p[0] << 8) | p[1] : 1005;
    size_t n = len > 2 ? len - 2 : 0;
    if (n >= sizeof ws->close_reason)
        n = sizeof ws->close_reason - 1;
    memcpy(ws->close_reason, p + 2, n);
    ws->close_reason[n] = '\0';
}

/* Appends a data fragment; returns the whole text when it was the last one. */
static char *on_data(tk_ws *ws, int opcode, int fin, const unsigned char *p, size_t len)
{
    if (opcode != 0) { /* a new message starts */
        free(ws->msg);
        ws->msg = NULL;
        ws->msg_len = 0;
        ws->msg_is_text = opcode == 1;
    }
    char *msg = realloc(ws->msg, ws->msg_len + len + 1);
    if (!msg)
        abort();
    memcpy(msg + ws->msg_len, p, len);
    ws->msg_len += len;
    msg[ws->msg_len] = '\0';
    ws->msg = msg;
    if (!fin)
        return NULL;
    ws->msg = NULL;
    ws->msg_len = 0;
    if (ws->msg_is_text)
        return msg;
    free(msg);
    return NULL;
}

/* Parses one frame from ws->rx if it is all there. 1 = a frame was used
 * (*text set when it completed a text message), 0 = need more bytes. */
static int parse_frame(tk_ws *ws, char **text)
{
    if (ws->rx_len < 2)
        return 0;
    const unsigned char *rx = ws->rx;
    int fin = rx[0] & 0x80, opcode = rx[0] & 0x0f, masked = rx[1] & 0x80;
    uint64_t len = rx[1] & 0x7f;
    size_t h = 2;
    if (len == 126) {
        if (ws->rx_len < 4)
            return 0;
        len = ((uint64_t)rx[2] << 8) | rx[3];
        h = 4;
    } else if (len == 127) {
        if (ws->rx_len < 10)
            return 0;
        len = 0;
        for (int i = 0; i < 8; i++)
            len = (len << 8) | rx[2 + i];
        h = 10;
    }
    size_t mask_at = h;
    if (masked)
        h += 4;
    if (ws->rx_len < h + len)
        return 0;
    unsigned char *payload = ws->rx + h;
    for (size_t i = 0; masked && i < len; i++)
        payload[i] ^= ws->rx[mask_at + i % 4];
    if (opcode == 0x8)
        on_close_frame(ws, payload, (size_t)len);
    else if (opcode == 0x9)
        send_frame(ws, 0xA, payload, (size_t)len);
    else if (opcode <= 0x2)
        *text = on_data(ws, opcode, fin, payload, (size_t)len);
    consume(ws, h + (size_t)len);
    return 1;
}

/* The next text message from the socket. NULL on timeout or when closed. */
static char *read_message(tk_ws *ws, long deadline)
{
    while (!ws->closed) {
        char *text = NULL;
        if (parse_frame(ws, &text)) {
            if (text)
                return text;
            continue;
        }
        int r = fill(ws, deadline);
        if (r == 0)
            return NULL;
        if (r < 0)
            ws->closed = 1; /* close_code stays TK_WS_NO_CLOSE_FRAME unless one came */
    }
    return NULL;
}

/* Where the HTTP header ends ("\r\n\r\n"), or 0 when not there yet. */
static size_t header_end(const tk_ws *ws)
{
    for (size_t i = 0; i + 4 <= ws->rx_len; i++)
        if (memcmp(ws->rx + i, "\r\n\r\n", 4) == 0)
            return i + 4;
    return 0;
}

static int read_handshake(tk_ws *ws, int *status)
{
    long deadline = now_ms() + HANDSHAKE_TIMEOUT_MS;
    for (;;) {
        size_t end = header_end(ws);
        if (end) {
            char line[64] = "";
            memcpy(line, ws->rx, ws->rx_len < sizeof line - 1 ? ws->rx_len : sizeof line - 1);
            if (sscanf(line, "HTTP/1.%*d %d", status) != 1)
                *status = 0;
            consume(ws, end);
            return *status == 101 ? 0 : -1;
        }
        if (ws->rx_len > HEADER_MAX || fill(ws, deadline) <= 0)
            return -1;
    }
}

static int connect_loopback(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

tk_ws *tk_ws_open(int port, const char *target, const char *header_key, int *status)
{
    int got = 0;
    tk_ws *ws = calloc(1, sizeof *ws);
    if (!ws)
        abort();
    ws->fd = connect_loopback(port);
    char req[4096], key_line[256] = "";
    if (header_key)
        snprintf(key_line, sizeof key_line, "x-api-key: %s\r\n", header_key);
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     "Sec-WebSocket-Version: 13\r\n%s\r\n",
                     target, port, key_line);
    int ok = ws->fd >= 0 && n > 0 && (size_t)n < sizeof req &&
             write_all(ws->fd, req, (size_t)n) == 0 && read_handshake(ws, &got) == 0;
    if (status)
        *status = got;
    if (!ok) {
        tk_ws_free(ws);
        return NULL;
    }
    return ws;
}

int tk_ws_send(tk_ws *ws, const char *text)
{
    return send_frame(ws, 0x1, text, strlen(text));
}

char *tk_ws_recv(tk_ws *ws, int timeout_ms)
{
    if (ws->backlog) {
        backlog_item *item = ws->backlog;
        ws->backlog = item->next;
        char *text = item->text;
        free(item);
        return text;
    }
    return read_message(ws, now_ms() + timeout_ms);
}

int tk_ws_closed(tk_ws *ws, int timeout_ms, char *reason, size_t cap)
{
    long deadline = now_ms() + timeout_ms;
    while (!ws->closed && now_ms() < deadline)
        free(read_message(ws, deadline));
    if (reason && cap)
        snprintf(reason, cap, "%s", ws->close_reason);
    return ws->closed ? ws->close_code : TK_WS_OPEN;
}

void tk_ws_free(tk_ws *ws)
{
    if (!ws)
        return;
    if (ws->fd >= 0)
        close(ws->fd);
    while (ws->backlog) {
        backlog_item *item = ws->backlog;
        ws->backlog = item->next;
        free(item->text);
        free(item);
    }
    free(ws->rx);
    free(ws->msg);
    free(ws);
}

/* ---- Phoenix -------------------------------------------------------------- */

static int str_is(const cJSON *item, const char *want)
{
    return !want || (cJSON_IsString(item) && strcmp(item->valuestring, want) == 0);
}

static cJSON *parse_if_match(const char *text, const char *topic, const char *event,
                             const char *ref)
{
    cJSON *f = cJSON_Parse(text);
    if (cJSON_IsArray(f) && cJSON_GetArraySize(f) == 5 && str_is(cJSON_GetArrayItem(f, 1), ref) &&
        str_is(cJSON_GetArrayItem(f, 2), topic) && str_is(cJSON_GetArrayItem(f, 3), event))
        return f;
    cJSON_Delete(f);
    return NULL;
}

static void keep(tk_ws *ws, char *text)
{
    backlog_item *item = calloc(1, sizeof *item), **tail = &ws->backlog;
    if (!item)
        abort();
    item->text = text;
    while (*tail)
        tail = &(*tail)->next;
    *tail = item;
}

cJSON *tk_ws_wait(tk_ws *ws, const char *topic, const char *event, const char *ref, int timeout_ms)
{
    for (backlog_item **at = &ws->backlog; *at; at = &(*at)->next) {
        cJSON *f = parse_if_match((*at)->text, topic, event, ref);
        if (f) {
            backlog_item *item = *at;
            *at = item->next;
            free(item->text);
            free(item);
            return f;
        }
    }
    long deadline = now_ms() + timeout_ms;
    char *text;
    while ((text = read_message(ws, deadline)) != NULL) {
        cJSON *f = parse_if_match(text, topic, event, ref);
        if (f) {
            free(text);
            return f;
        }
        keep(ws, text);
    }
    return NULL;
}

/* Refs count up per connection, shared by joins, pushes and heartbeats. */
static void take_ref(tk_ws *ws, char ref[16])
{
    snprintf(ref, 16, "%u", ++ws->next_ref);
}

static int send_phx(tk_ws *ws, const char *join_ref, const char *ref, const char *topic,
                    const char *event, const char *payload_json)
{
    cJSON *f = cJSON_CreateArray();
    cJSON_AddItemToArray(f, join_ref ? cJSON_CreateString(join_ref) : cJSON_CreateNull());
    cJSON_AddItemToArray(f, cJSON_CreateString(ref));
    cJSON_AddItemToArray(f, cJSON_CreateString(topic));
    cJSON_AddItemToArray(f, cJSON_CreateString(event));
    cJSON *payload = cJSON_Parse(payload_json ? payload_json : "{}");
    cJSON_AddItemToArray(f, payload ? payload : cJSON_CreateObject());
    char *text = cJSON_PrintUnformatted(f);
    cJSON_Delete(f);
    if (!text)
        abort();
    int rc = tk_ws_send(ws, text);
    free(text);
    return rc;
}

int tk_ws_push(tk_ws *ws, const char *join_ref, const char *topic, const char *event,
               const char *payload_json, char *ref_out)
{
    char ref[16];
    take_ref(ws, ref);
    if (ref_out)
        memcpy(ref_out, ref, sizeof ref);
    return send_phx(ws, join_ref, ref, topic, event, payload_json);
}

int tk_ws_join(tk_ws *ws, const char *topic, char *join_ref_out, char *reason, size_t cap,
               int timeout_ms)
{
    char ref[16];
    take_ref(ws, ref);
    if (join_ref_out)
        memcpy(join_ref_out, ref, sizeof ref);
    if (send_phx(ws, ref, ref, topic, "phx_join", "{}") != 0)
        return -1;
    cJSON *reply = tk_ws_wait(ws, topic, "phx_reply", ref, timeout_ms);
    if (!reply)
        return -1;
    const cJSON *payload = cJSON_GetArrayItem(reply, 4);
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(payload, "status");
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(payload, "response"), "reason");
    int ok = cJSON_IsString(status) && strcmp(status->valuestring, "ok") == 0;
    if (reason && cap)
        snprintf(reason, cap, "%s", cJSON_IsString(why) ? why->valuestring : "");
    cJSON_Delete(reply);
    return ok;
}
