/* phoenix: the v2 frame codec, the connect URL, the reconnect policy, and
 * the client against the fake Band server (tests/lib/tk_band.h), a
 * scripted WebSocket server for what the fake never sends (null join_refs,
 * fragments, binary frames, refused rejoins, TLS) and a CONNECT proxy.
 * Every wait is bounded. PHX_TEST_LOG=1 copies the clients' logs to stderr. */
#include "clock.h"
#include "phoenix.h"
#include "phx_backoff.h"
#include "phx_frame.h"
#include "phx_url.h"
#include "redact.h"
#include "tk.h"
#include "tk_band.h"
#include "unit.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- frame codec -------------------------------------------------------- */

/* Decodes text, expecting rc; returns the frame (cleared by the caller). */
static phx_frame decode(const char *text, err_code want, const char *what)
{
    phx_frame f;
    char err[ERR_BUFSZ] = "";
    err_code rc = phx_frame_decode(text, strlen(text), &f, err);
    UNIT_CHECK(rc == want, "%s: rc=%s want %s (%s)", what, err_str(rc), err_str(want), err);
    if (rc != ERR_OK)
        UNIT_CHECK(f.root == NULL && f.topic == NULL, "%s: failed decode leaves frame empty",
                   what);
    return f;
}

static void test_frame_decodes_a_push(void)
{
    phx_frame f = decode("[\"3\",null,\"chat_room:r1\",\"message_created\","
                         "{\"id\":\"m1\",\"content\":\"hi\"}]",
                         ERR_OK, "push");
    UNIT_CHECK(f.join_ref && strcmp(f.join_ref, "3") == 0, "join_ref");
    UNIT_CHECK(f.ref == NULL, "null ref");
    UNIT_CHECK(strcmp(f.topic, "chat_room:r1") == 0, "topic");
    UNIT_CHECK(strcmp(f.event, "message_created") == 0, "event");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(f.payload, "id");
    UNIT_CHECK(cJSON_IsString(id) && strcmp(id->valuestring, "m1") == 0, "payload kept");
    phx_frame_clear(&f);
    UNIT_CHECK(f.root == NULL && f.payload == NULL, "clear empties the frame");
    phx_frame_clear(&f); /* twice is harmless */
    phx_frame_clear(NULL);
}

static void test_frame_null_refs_and_reply(void)
{
    phx_frame f = decode(" [null, null, \"phoenix\", \"phx_reply\", "
                         "{\"status\":\"ok\",\"response\":{}}] \n",
                         ERR_OK, "spaces around");
    UNIT_CHECK(f.join_ref == NULL && f.ref == NULL, "both refs null");
    UNIT_CHECK(cJSON_IsObject(f.payload), "payload object");
    phx_frame_clear(&f);
}

static void test_frame_non_object_payload_is_empty_object(void)
{
    static const char *const payloads[] = {"null", "[]", "[1,2]", "\"text\"", "42", "true"};
    for (size_t i = 0; i < sizeof payloads / sizeof payloads[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "[\"1\",\"1\",\"t\",\"e\",%s]", payloads[i]);
        phx_frame f = decode(text, ERR_OK, payloads[i]);
        UNIT_CHECK(cJSON_IsObject(f.payload) && f.payload->child == NULL,
                   "payload %s read as {}", payloads[i]);
        phx_frame_clear(&f);
    }
}

static void test_frame_rejects_garbage(void)
{
    static const char *const bad[] = {
        "",
        "not json",
        "{\"topic\":\"t\",\"event\":\"e\",\"payload\":{},\"ref\":null}", /* v1 object framing */
        "[\"1\",\"1\",\"t\",\"e\"]",                                      /* 4 elements */
        "[\"1\",\"1\",\"t\",\"e\",{},{}]",                                /* 6 elements */
        "[1,\"1\",\"t\",\"e\",{}]",                                       /* number join_ref */
        "[\"1\",2,\"t\",\"e\",{}]",                                       /* number ref */
        "[\"1\",\"1\",3,\"e\",{}]",                                       /* number topic */
        "[\"1\",\"1\",\"t\",null,{}]",                                    /* null event */
        "[\"1\",\"1\",\"\",\"e\",{}]",                                    /* empty topic */
        "[\"1\",\"1\",\"t\",\"e\",{}] trailing",                          /* bytes after */
        "[\"1\",\"1\",\"t\",\"e\",{}",                                    /* unterminated */
        "[\"1\",\"1\",\"t\",\"e\",{\"a\":]}",                             /* broken payload */
        "[[],\"1\",\"t\",\"e\",{}]",                                      /* array ref */
        "\"just a string\"",
        "[]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char what[32];
        snprintf(what, sizeof what, "garbage #%zu", i);
        phx_frame f = decode(bad[i], ERR_PROTOCOL, what);
        phx_frame_clear(&f);
    }
}

static void test_frame_bounds_and_length(void)
{
    /* the length is honoured: the bytes after it are not read */
    const char *text = "[null,null,\"t\",\"e\",{}]GARBAGE";
    phx_frame f;
    char err[ERR_BUFSZ];
    UNIT_CHECK(phx_frame_decode(text, 22, &f, err) == ERR_OK, "decode of a prefix: %s", err);
    phx_frame_clear(&f);

    /* over the limit: refused before parsing */
    size_t big = PHX_FRAME_MAX + 1;
    char *huge = malloc(big + 1);
    if (!UNIT_CHECK(huge != NULL, "malloc"))
        return;
    memset(huge, ' ', big);
    huge[0] = '[';
    huge[big - 1] = ']';
    huge[big] = '\0';
    UNIT_CHECK(phx_frame_decode(huge, big, &f, err) == ERR_PROTOCOL, "huge frame refused");
    UNIT_CHECK(strstr(err, "exceeds") != NULL, "message says why: %s", err);

    /* deep nesting: cJSON's limit, an error and not a stack overflow */
    size_t depth = 5000;
    memset(huge, '[', depth);
    memset(huge + depth, ']', depth);
    huge[2 * depth] = '\0';
    UNIT_CHECK(phx_frame_decode(huge, 2 * depth, &f, err) == ERR_PROTOCOL, "deep nesting refused");
    free(huge);

    UNIT_CHECK(phx_frame_decode(NULL, 0, &f, err) == ERR_USAGE, "NULL text");
    UNIT_CHECK(phx_frame_decode("[]", 2, NULL, err) == ERR_USAGE, "NULL frame");
}

static void test_frame_encode_round_trip(void)
{
    char *text = NULL;
    char err[ERR_BUFSZ];
    UNIT_CHECK(phx_frame_encode("5", "5", "agent_control:a1", "phx_join", NULL, &text, err) ==
                   ERR_OK, "encode join: %s", err);
    UNIT_CHECK(text && strcmp(text, "[\"5\",\"5\",\"agent_control:a1\",\"phx_join\",{}]") == 0,
               "join text: %s", text ? text : "(null)");
    free(text);

    UNIT_CHECK(phx_frame_encode(NULL, "7", "phoenix", "heartbeat", NULL, &text, err) == ERR_OK,
               "encode heartbeat");
    UNIT_CHECK(text && strcmp(text, "[null,\"7\",\"phoenix\",\"heartbeat\",{}]") == 0,
               "heartbeat text: %s", text ? text : "(null)");
    free(text);

    cJSON *payload = cJSON_Parse("{\"body\":\"quote \\\" and \\u00e9\",\"n\":[1,2]}");
    UNIT_CHECK(phx_frame_encode("1", NULL, "chat_room:r", "custom", payload, &text, err) == ERR_OK,
               "encode with payload");
    phx_frame f;
    UNIT_CHECK(text && phx_frame_decode(text, strlen(text), &f, err) == ERR_OK, "round trip");
    if (text && f.root) {
        UNIT_CHECK(strcmp(f.join_ref, "1") == 0 && f.ref == NULL, "refs survive");
        UNIT_CHECK(cJSON_Compare(f.payload, payload, 1), "payload survives");
        phx_frame_clear(&f);
    }
    free(text);
    UNIT_CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(payload, "n")) == 2,
               "the caller's payload is untouched");
    cJSON_Delete(payload);
}

static void test_frame_encode_refuses_invalid(void)
{
    char *text = (char *)"sentinel";
    char err[ERR_BUFSZ];
    UNIT_CHECK(phx_frame_encode("1", "1", "", "e", NULL, &text, err) == ERR_USAGE, "empty topic");
    UNIT_CHECK(text == NULL, "out cleared on failure");
    UNIT_CHECK(phx_frame_encode("1", "1", "t", NULL, NULL, &text, err) == ERR_USAGE, "NULL event");
    cJSON *arr = cJSON_CreateArray();
    UNIT_CHECK(phx_frame_encode("1", "1", "t", "e", arr, &text, err) == ERR_USAGE,
               "array payload");
    cJSON_Delete(arr);
    UNIT_CHECK(phx_frame_encode("1", "1", "t", "e", NULL, NULL, err) == ERR_USAGE, "NULL out");
}

/* ---- connect URL -------------------------------------------------------- */

static void expect_url(const char *url, const char *key, const char *agent, int tls,
                       const char *host, int port, const char *path)
{
    phx_endpoint ep;
    char err[ERR_BUFSZ] = "";
    err_code rc = phx_url_build(url, key, agent, &ep, err);
    if (!UNIT_CHECK(rc == ERR_OK, "%s: %s", url, err))
        return;
    UNIT_CHECK(ep.tls == tls, "%s: tls=%d", url, ep.tls);
    UNIT_CHECK(strcmp(ep.host, host) == 0, "%s: host %s want %s", url, ep.host, host);
    UNIT_CHECK(ep.port == port, "%s: port %d want %d", url, ep.port, port);
    UNIT_CHECK(strcmp(ep.path, path) == 0, "%s: path\n  got  %s\n  want %s", url, ep.path, path);
    phx_endpoint_clear(&ep);
    UNIT_CHECK(ep.path == NULL, "clear frees the path");
}

static void test_url_user_and_agent(void)
{
    expect_url("wss://staging.band.example/api/v1/socket/websocket", "userkey123", NULL, 1,
               "staging.band.example", 443,
               "/api/v1/socket/websocket?api_key=userkey123&vsn=2.0.0");
    expect_url("wss://staging.band.example/api/v1/socket/websocket", "agentkey12",
               "6f1c2d3e-0000-4000-8000-000000000001", 1, "staging.band.example", 443,
               "/api/v1/socket/websocket?api_key=agentkey12&vsn=2.0.0"
               "&agent_id=6f1c2d3e-0000-4000-8000-000000000001");
    expect_url("ws://127.0.0.1:4000", "userkey123", "", 0, "127.0.0.1", 4000,
               "/?api_key=userkey123&vsn=2.0.0");
    expect_url("WS://[::1]:9/s", "userkey123", NULL, 0, "::1", 9, "/s?api_key=userkey123&vsn=2.0.0");
}

static void test_url_query_rebuild(void)
{
    expect_url("wss://h.example/socket/websocket?api_key=old&foo=1&vsn=1.0.0&bar=a%20b#frag",
               "newkey1234", "a1", 1, "h.example", 443,
               "/socket/websocket?foo=1&bar=a%20b&api_key=newkey1234&vsn=2.0.0&agent_id=a1");
    expect_url("wss://h.example:8443/ws?&&vsn=2&api_key_extra=x", "k3y-12345", NULL, 1,
               "h.example", 8443, "/ws?api_key_extra=x&api_key=k3y-12345&vsn=2.0.0");
}

static void test_url_encodes_key_and_agent(void)
{
    expect_url("wss://h.example/ws", "a+b/c=d&e f~._-", "id&x=1", 1, "h.example", 443,
               "/ws?api_key=a%2Bb%2Fc%3Dd%26e%20f~._-&vsn=2.0.0&agent_id=id%26x%3D1");
}

static void test_url_rejects(void)
{
    static const char *const bad[] = {"https://h.example/ws", "h.example/ws", "wss://",
                                      "wss://:443/ws", "wss://h.example:0/", "wss://h.example:99999/",
                                      "wss://user:pw@h.example/", "wss://[::1/ws",
                                      "wss://h.example:44x/"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        phx_endpoint ep;
        char err[ERR_BUFSZ] = "";
        err_code rc = phx_url_build(bad[i], "secretkey99", NULL, &ep, err);
        UNIT_CHECK(rc == ERR_CONFIG, "%s: rc=%s", bad[i], err_str(rc));
        UNIT_CHECK(ep.path == NULL, "%s: nothing allocated", bad[i]);
        UNIT_CHECK(!strstr(err, "secretkey99") && !strstr(err, bad[i]),
                   "%s: message quotes neither key nor URL: %s", bad[i], err);
    }
    phx_endpoint ep;
    char err[ERR_BUFSZ];
    UNIT_CHECK(phx_url_build("wss://h/", "", NULL, &ep, err) == ERR_USAGE, "empty key");
    UNIT_CHECK(phx_url_build(NULL, "k", NULL, &ep, err) == ERR_USAGE, "NULL url");
}

/* ---- reconnect policy --------------------------------------------------- */

static void test_close_codes(void)
{
    UNIT_CHECK(phx_close_classify(1000) == PHX_CLOSE_FINAL, "1000 final");
    UNIT_CHECK(phx_close_classify(1001) == PHX_CLOSE_FINAL, "1001 final");
    UNIT_CHECK(phx_close_classify(1008) == PHX_CLOSE_TERMINAL, "1008 terminal");
    static const int retry[] = {0, 1006, 1011, 1012, 1013, 4000, 1002};
    for (size_t i = 0; i < sizeof retry / sizeof retry[0]; i++)
        UNIT_CHECK(phx_close_classify(retry[i]) == PHX_CLOSE_RETRY, "%d retries", retry[i]);
}

static void test_backoff_delays(void)
{
    phx_backoff sdk = phx_backoff_default();
    UNIT_CHECK(sdk.base_ms == 500 && sdk.cap_ms == 30000 && sdk.jitter == 0.5 &&
                   sdk.restart_min_ms == 1000 && sdk.restart_max_ms == 5000 &&
                   sdk.later_min_ms == 30000 && sdk.later_max_ms == 60000 &&
                   sdk.stable_ms == 60000,
               "SDK defaults");
    /* equal jitter: d/2 with u=0, d with u->1 */
    static const int64_t lo[] = {250, 500, 1000, 2000, 4000, 8000, 15000, 15000};
    for (unsigned n = 0; n < 8; n++) {
        int64_t a = phx_backoff_delay_ms(&sdk, n, 0, 0.0, 0.0);
        int64_t b = phx_backoff_delay_ms(&sdk, n, 0, 0.999999, 0.0);
        UNIT_CHECK(a == lo[n], "attempt %u low %lld want %lld", n, (long long)a, (long long)lo[n]);
        UNIT_CHECK(b >= 2 * lo[n] - 1 && b <= 2 * lo[n], "attempt %u high %lld", n, (long long)b);
    }
    UNIT_CHECK(phx_backoff_delay_ms(&sdk, 4000000000u, 1011, 1.0, 0) == 30000,
               "a huge attempt count stays at the cap");
    phx_backoff none = {.base_ms = 100, .cap_ms = 1000, .jitter = 0.0};
    UNIT_CHECK(phx_backoff_delay_ms(&none, 2, 0, 0.7, 0) == 400, "no jitter: exact");
    phx_backoff odd = {.base_ms = -5, .cap_ms = -1, .jitter = 7.0};
    UNIT_CHECK(phx_backoff_delay_ms(&odd, 3, 0, 0.5, 0) == 0, "nonsense policy clamps to 0");
}

static void test_backoff_close_code_floors(void)
{
    phx_backoff sdk = phx_backoff_default();
    UNIT_CHECK(phx_backoff_delay_ms(&sdk, 0, 1012, 0, 0) == 1000, "1012 floor low");
    UNIT_CHECK(phx_backoff_delay_ms(&sdk, 0, 1012, 0, 0.999999) >= 4999, "1012 floor high");
    UNIT_CHECK(phx_backoff_delay_ms(&sdk, 0, 1013, 0, 0) == 30000, "1013 floor low");
    UNIT_CHECK(phx_backoff_delay_ms(&sdk, 0, 1013, 0, 0.999999) >= 59999, "1013 floor high");
    UNIT_CHECK(phx_backoff_delay_ms(&sdk, 9, 1012, 1, 0) == 30000,
               "the floor only raises a delay");
    UNIT_CHECK(phx_backoff_delay_ms(&sdk, 0, 1011, 0, 0.9) == 250, "1011 has no floor");
    /* the floors are policy: a compressed one keeps the shape */
    phx_backoff fast = sdk;
    fast.restart_min_ms = 100, fast.restart_max_ms = 500;
    fast.later_min_ms = 3000, fast.later_max_ms = 6000;
    fast.base_ms = 10;
    UNIT_CHECK(phx_backoff_delay_ms(&fast, 0, 1012, 0, 0) == 100 &&
                   phx_backoff_delay_ms(&fast, 0, 1012, 0, 0.5) == 300 &&
                   phx_backoff_delay_ms(&fast, 0, 1013, 0, 0.999999) >= 5999,
               "compressed floors");
    phx_backoff bad = fast;
    bad.restart_min_ms = -7, bad.restart_max_ms = -9;
    bad.later_min_ms = 400, bad.later_max_ms = 100;
    int64_t restart = phx_backoff_delay_ms(&bad, 0, 1012, 0, 1);
    int64_t later = phx_backoff_delay_ms(&bad, 0, 1013, 0, 1);
    UNIT_CHECK(restart == 5 && later == 400, "nonsense floors clamp: %lld %lld",
               (long long)restart, (long long)later);
}

/* ---- client: options and offline behaviour ------------------------------ */

static void test_client_rejects_bad_options(void)
{
    phx_options o;
    phx_client *c = (phx_client *)&o; /* sentinel: must come back NULL */
    char err[ERR_BUFSZ];
    phx_options_init(&o);
    UNIT_CHECK(phx_client_new(&o, &c, err) == ERR_USAGE && c == NULL, "no ws_url");
    UNIT_CHECK(strstr(err, "ws_url") != NULL, "names the field: %s", err);
    o.ws_url = "ws://127.0.0.1:9/socket";
    o.api_key = "short";
    UNIT_CHECK(phx_client_new(&o, &c, err) == ERR_USAGE && strstr(err, "api_key"),
               "short key: %s", err);
    o.api_key = "long-enough-key-1";
    o.heartbeat_ms = 0;
    UNIT_CHECK(phx_client_new(&o, &c, err) == ERR_USAGE, "zero heartbeat");
    o.heartbeat_ms = 1000;
    o.backoff.jitter = 1.5;
    UNIT_CHECK(phx_client_new(&o, &c, err) == ERR_USAGE, "jitter above 1");
    o.backoff = phx_backoff_default();
    o.backoff.restart_max_ms = 999;
    UNIT_CHECK(phx_client_new(&o, &c, err) == ERR_USAGE && strstr(err, "restart_min_ms"),
               "1012 floor max below its min: %s", err);
    o.backoff = phx_backoff_default();
    o.ws_url = "https://127.0.0.1:9/socket";
    UNIT_CHECK(phx_client_new(&o, &c, err) == ERR_CONFIG, "not a ws URL: %s", err);
    o.ws_url = "ws://127.0.0.1:9/socket";
    netenv_proxy bad = {1, "", 0, ""};
    o.proxy = &bad;
    UNIT_CHECK(phx_client_new(&o, &c, err) == ERR_CONFIG, "unusable proxy: %s", err);
    UNIT_CHECK(phx_client_new(NULL, &c, err) == ERR_USAGE, "NULL options");
}

static void test_client_lifecycle_without_server(void)
{
    phx_options o;
    phx_options_init(&o);
    o.ws_url = "ws://127.0.0.1:9/socket";
    o.api_key = "lifecycle-key-0001";
    phx_client *c = NULL;
    char err[ERR_BUFSZ];
    if (!UNIT_CHECK(phx_client_new(&o, &c, err) == ERR_OK, "new: %s", err))
        return;
    UNIT_CHECK(redact_has_secret("x lifecycle-key-0001 y", 22), "key registered with redact");
    UNIT_CHECK(phx_conn_state_get(c) == PHX_IDLE, "idle before connect");
    UNIT_CHECK(phx_service(c, 0, err) == ERR_USAGE, "service before connect");
    UNIT_CHECK(phx_join(c, "t", 100, err) == ERR_USAGE, "join before connect");
    UNIT_CHECK(phx_connect(c, err) == ERR_OK, "connect");
    UNIT_CHECK(phx_connect(c, err) == ERR_USAGE, "connect twice");
    UNIT_CHECK(phx_join(c, "", 100, err) == ERR_USAGE, "empty topic");
    UNIT_CHECK(phx_leave(c, "never-joined", 100, err) == ERR_NOTFOUND, "leave unknown");
    UNIT_CHECK(phx_close(c, err) == ERR_OK, "close");
    UNIT_CHECK(phx_conn_state_get(c) == PHX_CLOSED, "closed");
    UNIT_CHECK(phx_service(c, 0, err) == ERR_CLOSED, "service after close");
    UNIT_CHECK(phx_close(c, err) == ERR_OK, "close twice");
    phx_client_free(c);
    phx_client_free(NULL);
}

/* ---- client against the fake Band server -------------------------------- */

#define MAX_SEEN 128

typedef struct seen_state {
    phx_event event;
    unsigned generation;
    int code;
    char reason[200];
    char topic[128];
} seen_state;

typedef struct seen_push {
    char topic[128];
    char event[64];
    char content[256];
    int empty; /* the payload had no members */
} seen_push;

/* What a client's callbacks saw. */
typedef struct recorder {
    phx_client *self;
    seen_state states[MAX_SEEN];
    int nstates;
    seen_push pushes[MAX_SEEN];
    int npushes;
    err_code reentry_rc; /* phx_service called from inside on_state */
} recorder;

static void rec_state(const phx_state_info *info, void *ud)
{
    recorder *r = ud;
    char err[ERR_BUFSZ];
    r->reentry_rc = phx_service(r->self, 0, err);
    if (r->nstates >= MAX_SEEN)
        return;
    seen_state *s = &r->states[r->nstates++];
    s->event = info->event;
    s->generation = info->generation;
    s->code = info->close_code;
    snprintf(s->reason, sizeof s->reason, "%s", info->reason);
    snprintf(s->topic, sizeof s->topic, "%s", info->topic ? info->topic : "");
}

static void rec_push(const char *topic, const char *event, const cJSON *payload, void *ud)
{
    recorder *r = ud;
    if (r->npushes >= MAX_SEEN)
        return;
    seen_push *p = &r->pushes[r->npushes++];
    snprintf(p->topic, sizeof p->topic, "%s", topic);
    snprintf(p->event, sizeof p->event, "%s", event);
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(payload, "content");
    snprintf(p->content, sizeof p->content, "%s",
             cJSON_IsString(content) ? content->valuestring : "");
    p->empty = payload->child == NULL;
}

static int count_states(const recorder *r, phx_event ev)
{
    int n = 0;
    for (int i = 0; i < r->nstates; i++)
        n += r->states[i].event == ev;
    return n;
}

static const seen_state *last_state(const recorder *r, phx_event ev)
{
    for (int i = r->nstates - 1; i >= 0; i--)
        if (r->states[i].event == ev)
            return &r->states[i];
    return NULL;
}

/* Pushes matching topic/event (NULL = any) whose content holds `text`. */
static int count_pushes(const recorder *r, const char *topic, const char *event, const char *text)
{
    int n = 0;
    for (int i = 0; i < r->npushes; i++) {
        const seen_push *p = &r->pushes[i];
        n += (!topic || strcmp(p->topic, topic) == 0) && (!event || strcmp(p->event, event) == 0) &&
             (!text || strstr(p->content, text));
    }
    return n;
}

static void service_all(phx_client *const *cs, int n, int slice_ms)
{
    char err[ERR_BUFSZ];
    for (int i = 0; i < n; i++)
        if (cs[i])
            phx_service(cs[i], slice_ms, err);
}

/* Services the clients until cond holds or ms pass; `ok` gets cond. */
#define PUMP_UNTIL(ok, cs, n, ms, cond)                                                   \
    do {                                                                                  \
        int64_t dl_ = clock_mono_ms() + (ms);                                             \
        while (!((ok) = (cond)) && clock_mono_ms() < dl_)                                 \
            service_all(cs, n, 10);                                                       \
    } while (0)

#define WORLD_BACKOFF_BASE_MS 100
#define WORLD_BACKOFF_CAP_MS 300
#define WORLD_RESTART_MIN_MS 300
#define WORLD_RESTART_MAX_MS 600

/* A fake Band with a user, an agent and a room holding both. */
typedef struct world {
    tk_band band;
    int up;
    char agent_id[64];
    char agent_name[64];
    char agent_key[160];
    char room_id[64];
    char topic_control[128], topic_rooms[128], topic_chat[128], topic_people[128];
} world;

/* body.data[.a][.b] as a string into out; 0 when absent. */
static int json_get(const char *body, const char *a, const char *b, char *out, size_t cap)
{
    cJSON *root = body ? cJSON_Parse(body) : NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "data");
    if (a)
        v = cJSON_GetObjectItemCaseSensitive(v, a);
    if (b)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    int ok = cJSON_IsString(v);
    if (ok)
        snprintf(out, cap, "%s", v->valuestring);
    cJSON_Delete(root);
    return ok;
}

static char *user_call(world *w, const char *key, const char *method, const char *path,
                       const char *json, long want)
{
    long status = 0;
    char *body = tk_band_request(&w->band, method, path, key, json, &status);
    UNIT_CHECK(status == want, "%s %s: HTTP %ld want %ld: %s", method, path, status, want,
               body ? body : "(no answer)");
    return body;
}

static int world_start(world *w, int two_users)
{
    memset(w, 0, sizeof *w);
    redact_clear(); /* every test mints keys; the registry holds 32 */
    int rc = two_users ? tk_band_start2(&w->band, NULL, NULL) : tk_band_start(&w->band, NULL);
    if (!UNIT_CHECK(rc == 0, "fake Band started"))
        return 0;
    w->up = 1;
    char *body = user_call(w, w->band.user_key, "POST", "/api/v1/me/agents/register",
                           "{\"agent\":{\"name\":\"phx-agent\",\"description\":\"phoenix test\"}}",
                           201);
    int ok = json_get(body, "agent", "id", w->agent_id, sizeof w->agent_id) &&
             json_get(body, "agent", "name", w->agent_name, sizeof w->agent_name) &&
             json_get(body, "credentials", "api_key", w->agent_key, sizeof w->agent_key);
    free(body);
    body = user_call(w, w->band.user_key, "POST", "/api/v1/me/chats",
                     "{\"chat\":{\"title\":\"phoenix test room\"}}", 201);
    ok = ok && json_get(body, NULL, "id", w->room_id, sizeof w->room_id);
    free(body);
    char path[256], json[256];
    snprintf(path, sizeof path, "/api/v1/me/chats/%s/participants", w->room_id);
    snprintf(json, sizeof json, "{\"participant\":{\"participant_id\":\"%s\",\"role\":\"member\"}}",
             w->agent_id);
    free(user_call(w, w->band.user_key, "POST", path, json, 201));
    snprintf(w->topic_control, sizeof w->topic_control, "agent_control:%s", w->agent_id);
    snprintf(w->topic_rooms, sizeof w->topic_rooms, "agent_rooms:%s", w->agent_id);
    snprintf(w->topic_chat, sizeof w->topic_chat, "chat_room:%s", w->room_id);
    snprintf(w->topic_people, sizeof w->topic_people, "room_participants:%s", w->room_id);
    return UNIT_CHECK(ok, "agent and room provisioned");
}

static void world_stop(world *w)
{
    if (w->up)
        tk_band_stop(&w->band);
    w->up = 0;
}

/* The user mentions the agent in the room; the text is the marker. */
static void send_mention(world *w, const char *text)
{
    char path[256], json[512];
    snprintf(path, sizeof path, "/api/v1/me/chats/%s/messages", w->room_id);
    snprintf(json, sizeof json,
             "{\"message\":{\"content\":\"@%s %s\",\"mentions\":[{\"id\":\"%s\",\"name\":\"%s\"}]}}",
             w->agent_name, text, w->agent_id, w->agent_name);
    free(user_call(w, w->band.user_key, "POST", path, json, 201));
}

static void control(world *w, const char *json)
{
    UNIT_CHECK(tk_band_control(&w->band, json) == 200, "control %s", json);
}

/* Options for a client of this world: the agent when as_agent, else the
 * first user; short timeouts so failures show fast, and the SDK's
 * reconnect policy compressed (a fifth of its first delay, a tenth of its
 * 1012 floor) so a recovery runs the same logic without the real wait. */
static phx_options world_options(world *w, int as_agent, recorder *rec)
{
    phx_options o;
    phx_options_init(&o);
    o.ws_url = w->band.ws_url;
    o.api_key = as_agent ? w->agent_key : w->band.user_key;
    o.agent_id = as_agent ? w->agent_id : NULL;
    o.join_timeout_ms = 3000;
    o.open_timeout_ms = 3000;
    o.backoff.base_ms = WORLD_BACKOFF_BASE_MS;
    o.backoff.cap_ms = WORLD_BACKOFF_CAP_MS;
    o.backoff.restart_min_ms = WORLD_RESTART_MIN_MS;
    o.backoff.restart_max_ms = WORLD_RESTART_MAX_MS;
    o.on_push = rec_push;
    o.on_state = rec_state;
    o.ud = rec;
    o.log = getenv("PHX_TEST_LOG") ? stderr : NULL;
    return o;
}

static phx_client *start_client(const phx_options *o, recorder *rec)
{
    phx_client *c = NULL;
    char err[ERR_BUFSZ];
    if (!UNIT_CHECK(phx_client_new(o, &c, err) == ERR_OK, "client: %s", err))
        return NULL;
    rec->self = c;
    UNIT_CHECK(phx_connect(c, err) == ERR_OK, "connect: %s", err);
    return c;
}

static int join_ok(phx_client *c, const char *topic)
{
    char err[ERR_BUFSZ] = "";
    err_code rc = phx_join(c, topic, 0, err);
    return UNIT_CHECK(rc == ERR_OK, "join %s: %s %s", topic, err_str(rc), err);
}

/* The agent joins its four topics in the SDK's order. */
static int agent_joins(world *w, phx_client *agent)
{
    return join_ok(agent, w->topic_control) && join_ok(agent, w->topic_rooms) &&
           join_ok(agent, w->topic_chat) && join_ok(agent, w->topic_people);
}

static void test_client_joins_and_receives_pushes(void)
{
    world w;
    recorder ra = {0}, ru = {0};
    phx_client *agent = NULL, *user = NULL;
    if (!world_start(&w, 0))
        goto out;
    phx_options oa = world_options(&w, 1, &ra), ou = world_options(&w, 0, &ru);
    agent = start_client(&oa, &ra);
    user = start_client(&ou, &ru);
    if (!agent || !user || !agent_joins(&w, agent) || !join_ok(user, w.topic_chat))
        goto out;
    UNIT_CHECK(count_states(&ra, PHX_CONNECTED) == 1 && ra.states[0].generation == 1,
               "agent: one PHX_CONNECTED, generation 1");
    UNIT_CHECK(ra.reentry_rc == ERR_USAGE, "phx_service inside a callback is refused");
    UNIT_CHECK(phx_is_joined(agent, w.topic_people) && !phx_is_joined(agent, "chat_room:other"),
               "phx_is_joined");
    /* refs: one counter, joins numbered in order */
    UNIT_CHECK(strcmp(phx_join_ref(agent, w.topic_control), "1") == 0 &&
                   strcmp(phx_join_ref(agent, w.topic_people), "4") == 0,
               "join_refs 1..4, got %s..%s", phx_join_ref(agent, w.topic_control),
               phx_join_ref(agent, w.topic_people));

    send_mention(&w, "marker:abc123");
    phx_client *both[] = {agent, user};
    int ok;
    PUMP_UNTIL(ok, both, 2, 5000,
               count_pushes(&ra, w.topic_chat, "message_created", "marker:abc123") == 1 &&
                   count_pushes(&ru, w.topic_chat, "message_created", "marker:abc123") == 1);
    UNIT_CHECK(ok, "message_created reached agent (%d pushes) and user (%d pushes)", ra.npushes,
               ru.npushes);
    phx_stats st;
    phx_stats_get(agent, &st);
    UNIT_CHECK(st.state == PHX_OPEN && st.generation == 1 && st.disconnects == 0 &&
                   st.pushes == (unsigned)ra.npushes && st.frames_rejected == 0,
               "agent stats: state %d gen %u disc %u pushes %u", st.state, st.generation,
               st.disconnects, st.pushes);
out:
    phx_client_free(agent);
    phx_client_free(user);
    world_stop(&w);
}

static void test_client_join_refused(void)
{
    world w;
    recorder r1 = {0}, r2 = {0};
    phx_client *user = NULL, *other = NULL;
    if (!world_start(&w, 1))
        goto out;
    phx_options o1 = world_options(&w, 0, &r1), o2 = world_options(&w, 0, &r2);
    o2.api_key = w.band.user_key2;
    user = start_client(&o1, &r1);
    other = start_client(&o2, &r2);
    if (!user || !other)
        goto out;
    char err[ERR_BUFSZ] = "";
    err_code rc = phx_join(other, w.topic_chat, 0, err);
    UNIT_CHECK(rc == ERR_PROTOCOL && strstr(err, "unauthorized"),
               "a room the user is not in: %s %s", err_str(rc), err);
    UNIT_CHECK(!phx_is_joined(other, w.topic_chat), "not joined after a refusal");
    rc = phx_join(user, w.topic_control, 0, err);
    UNIT_CHECK(rc == ERR_PROTOCOL, "a user on an agent's control topic: %s", err);
    /* the refusals leave both clients usable */
    UNIT_CHECK(join_ok(user, w.topic_chat), "the user joins its own room after a refusal");
    rc = phx_join(user, w.topic_chat, 0, err);
    UNIT_CHECK(rc == ERR_USAGE, "joining twice: %s", err);
out:
    phx_client_free(user);
    phx_client_free(other);
    world_stop(&w);
}

static void test_client_leave(void)
{
    world w;
    recorder r = {0};
    phx_client *user = NULL;
    if (!world_start(&w, 0))
        goto out;
    phx_options o = world_options(&w, 0, &r);
    user = start_client(&o, &r);
    if (!user || !join_ok(user, w.topic_chat))
        goto out;
    char err[ERR_BUFSZ] = "";
    err_code rc = phx_leave(user, w.topic_chat, 0, err);
    UNIT_CHECK(rc == ERR_OK, "leave: %s %s", err_str(rc), err);
    UNIT_CHECK(!phx_is_joined(user, w.topic_chat) && !phx_join_ref(user, w.topic_chat),
               "not joined after leaving");
    UNIT_CHECK(phx_leave(user, w.topic_chat, 0, err) == ERR_NOTFOUND, "leave twice");
    send_mention(&w, "after-leave");
    /* and the topic can be joined again, with a new join_ref */
    UNIT_CHECK(join_ok(user, w.topic_chat), "rejoin after leave");
    UNIT_CHECK(strcmp(phx_join_ref(user, w.topic_chat), "3") == 0,
               "refs keep counting (join 1, leave 2, join 3): %s", phx_join_ref(user, w.topic_chat));
    /* Band fans a room's messages out in order: once the one sent after the
     * rejoin is in, the one sent while away would have come before it. */
    send_mention(&w, "after-rejoin");
    phx_client *one[] = {user};
    int got;
    PUMP_UNTIL(got, one, 1, 5000, count_pushes(&r, w.topic_chat, NULL, "after-rejoin") > 0);
    UNIT_CHECK(got, "pushes flow again after the rejoin");
    UNIT_CHECK(count_pushes(&r, NULL, NULL, "after-leave") == 0,
               "no push of what was sent while away (%d pushes)", r.npushes);
out:
    phx_client_free(user);
    world_stop(&w);
}

static void test_client_heartbeat(void)
{
    world w;
    recorder r = {0};
    phx_client *user = NULL;
    if (!world_start(&w, 0))
        goto out;
    phx_options o = world_options(&w, 0, &r);
    o.heartbeat_ms = 100;
    user = start_client(&o, &r);
    if (!user || !join_ok(user, w.topic_chat))
        goto out;
    phx_client *one[] = {user};
    phx_stats st;
    int ok;
    PUMP_UNTIL(ok, one, 1, 3000, (phx_stats_get(user, &st), st.heartbeat_replies >= 4));
    UNIT_CHECK(ok, "4 heartbeat replies (one per 100 ms) within 3 s (sent %u, replies %u)", st.heartbeats_sent,
               st.heartbeat_replies);
    UNIT_CHECK(st.heartbeats_sent >= st.heartbeat_replies &&
                   st.heartbeats_sent <= st.heartbeat_replies + 1,
               "every heartbeat but the last answered: sent %u replies %u", st.heartbeats_sent,
               st.heartbeat_replies);
    UNIT_CHECK(st.disconnects == 0 && phx_is_joined(user, w.topic_chat),
               "heartbeats keep the socket and topic");
out:
    phx_client_free(user);
    world_stop(&w);
}

/* Copies the agent's four join_refs (current subscription) into refs. */
static void agent_refs(world *w, phx_client *agent, long refs[4])
{
    const char *topics[4] = {w->topic_control, w->topic_rooms, w->topic_chat, w->topic_people};
    for (int i = 0; i < 4; i++) {
        const char *r = phx_join_ref(agent, topics[i]);
        refs[i] = r ? strtol(r, NULL, 10) : -1;
    }
}

/* The agent, joined to its four topics, loses its socket through `fault`
 * and must come back: DISCONNECTED (want_code) then RECONNECTED, every
 * topic rejoined in order with new join_refs, pushes flowing again. */
static void expect_recovery(const char *fault, int want_code, int within_ms)
{
    world w;
    recorder r = {0};
    phx_client *agent = NULL;
    if (!world_start(&w, 0))
        goto out;
    phx_options o = world_options(&w, 1, &r);
    agent = start_client(&o, &r);
    if (!agent || !agent_joins(&w, agent))
        goto out;
    long before[4], after[4];
    agent_refs(&w, agent, before);
    int64_t t0 = clock_mono_ms();
    control(&w, fault);
    phx_client *one[] = {agent};
    int ok;
    PUMP_UNTIL(ok, one, 1, within_ms, count_states(&r, PHX_RECONNECTED) == 1);
    if (!UNIT_CHECK(ok, "%s: reconnected within %d ms (%d states)", fault, within_ms, r.nstates))
        goto out;
    int64_t took = clock_mono_ms() - t0;
    UNIT_CHECK(r.nstates == 3 && r.states[0].event == PHX_CONNECTED &&
                   r.states[1].event == PHX_DISCONNECTED && r.states[2].event == PHX_RECONNECTED,
               "%s: CONNECTED, DISCONNECTED, RECONNECTED (%d states)", fault, r.nstates);
    const seen_state *d = &r.states[1];
    UNIT_CHECK(d->code == want_code, "%s: close code %d want %d (%s)", fault, d->code, want_code,
               d->reason);
    UNIT_CHECK(d->reason[0] != '\0', "%s: a disconnect reason", fault);
    UNIT_CHECK(r.states[2].generation == 2, "%s: generation 2", fault);
    agent_refs(&w, agent, after);
    for (int i = 0; i < 4; i++)
        UNIT_CHECK(after[i] > before[3] && (i == 0 || after[i] == after[i - 1] + 1),
                   "%s: topic %d rejoined in order with a new ref (%ld -> %ld)", fault, i,
                   before[i], after[i]);
    phx_stats st;
    phx_stats_get(agent, &st);
    UNIT_CHECK(st.generation == 2 && st.disconnects == 1 && st.last_close_code == want_code,
               "%s: stats gen %u disc %u code %d", fault, st.generation, st.disconnects,
               st.last_close_code);
    if (want_code == 1002)
        UNIT_CHECK(took >= WORLD_RESTART_MIN_MS, "1012 (seen as 1002) waits at least the 1012 "
                   "floor, %d ms (%lld ms)", WORLD_RESTART_MIN_MS, (long long)took);
    send_mention(&w, "marker:after-reconnect");
    PUMP_UNTIL(ok, one, 1, 5000, count_pushes(&r, w.topic_chat, "message_created",
                                              "marker:after-reconnect") == 1);
    UNIT_CHECK(ok, "%s: pushes arrive after the reconnect", fault);
out:
    phx_client_free(agent);
    world_stop(&w);
}

static void test_client_recovers_from_drop(void)
{
    expect_recovery("{\"action\":\"drop_ws\"}", 0, 5000);
}

static void test_client_recovers_from_1011(void)
{
    expect_recovery("{\"action\":\"close\",\"code\":1011,\"reason\":\"keepalive\"}", 1011, 5000);
}

/* lws 4.1.6 turns a received 1012 into 1002 (see phoenix.h); the test
 * pins that, so an lws upgrade that fixes it shows up here. */
static void test_client_recovers_from_1012(void)
{
    expect_recovery("{\"action\":\"close\",\"code\":1012,\"reason\":\"restart\"}", 1002, 5000);
}

static void test_client_recovers_after_refusals(void)
{
    world w;
    recorder r = {0};
    phx_client *agent = NULL;
    if (!world_start(&w, 0))
        goto out;
    phx_options o = world_options(&w, 1, &r);
    agent = start_client(&o, &r);
    if (!agent || !agent_joins(&w, agent))
        goto out;
    int64_t t0 = clock_mono_ms();
    control(&w, "{\"action\":\"refuse\",\"seconds\":1}");
    control(&w, "{\"action\":\"drop_ws\"}");
    phx_client *one[] = {agent};
    int ok;
    PUMP_UNTIL(ok, one, 1, 10000, count_states(&r, PHX_RECONNECTED) == 1);
    int64_t took = clock_mono_ms() - t0;
    phx_stats st;
    phx_stats_get(agent, &st);
    UNIT_CHECK(ok, "reconnected within 10 s after 1 s of refusals (%lld ms, %u failures)",
               (long long)took, st.connect_failures);
    UNIT_CHECK(took >= 900, "not before the refusals ended (%lld ms)", (long long)took);
    UNIT_CHECK(st.connect_failures >= 2, "refused attempts counted: %u", st.connect_failures);
    UNIT_CHECK(count_states(&r, PHX_DISCONNECTED) == 1,
               "one DISCONNECTED for one lost connection, however many failed attempts");
    UNIT_CHECK(phx_is_joined(agent, w.topic_chat) && phx_is_joined(agent, w.topic_control),
               "topics rejoined");
out:
    phx_client_free(agent);
    world_stop(&w);
}

/* A close code that means "stop": no reconnect, PHX_GAVE_UP, ERR_CLOSED. */
static void expect_final(const char *fault, int code, const char *reason_has)
{
    world w;
    recorder r = {0};
    phx_client *user = NULL;
    if (!world_start(&w, 0))
        goto out;
    phx_options o = world_options(&w, 0, &r);
    user = start_client(&o, &r);
    if (!user || !join_ok(user, w.topic_chat))
        goto out;
    long upgrades = tk_band_stat(&w.band, "upgrade_attempts");
    control(&w, fault);
    phx_client *one[] = {user};
    int ok;
    PUMP_UNTIL(ok, one, 1, 3000, count_states(&r, PHX_GAVE_UP) == 1);
    if (!UNIT_CHECK(ok, "%s: gave up", fault))
        goto out;
    const seen_state *g = last_state(&r, PHX_GAVE_UP);
    const seen_state *d = last_state(&r, PHX_DISCONNECTED);
    UNIT_CHECK(d && d->code == code && g->code == code, "%s: code %d on both events", fault, code);
    UNIT_CHECK(strstr(g->reason, reason_has) != NULL, "%s: reason '%s' has '%s'", fault, g->reason,
               reason_has);
    char err[ERR_BUFSZ] = "";
    UNIT_CHECK(phx_service(user, 0, err) == ERR_CLOSED && strstr(err, reason_has),
               "%s: phx_service says closed: %s", fault, err);
    UNIT_CHECK(phx_join(user, "chat_room:x", 100, err) == ERR_CLOSED, "%s: join after the end",
               fault);
    /* give a wrong reconnect time to happen: three times the backoff cap */
    int64_t until = clock_mono_ms() + 3 * WORLD_BACKOFF_CAP_MS;
    while (clock_mono_ms() < until)
        service_all(one, 1, 50);
    UNIT_CHECK(tk_band_stat(&w.band, "upgrade_attempts") == upgrades,
               "%s: no reconnect attempt", fault);
    UNIT_CHECK(phx_conn_state_get(user) == PHX_CLOSED, "%s: state closed", fault);
out:
    phx_client_free(user);
    world_stop(&w);
}

static void test_client_1000_is_final(void)
{
    expect_final("{\"action\":\"close\",\"code\":1000,\"reason\":\"bye\"}", 1000,
                 "Reconnect disabled for close code 1000 reason=bye");
}

static void test_client_1008_is_terminal(void)
{
    expect_final("{\"action\":\"close\",\"code\":1008,\"reason\":\"policy\"}", 1008,
                 "terminal close code 1008 (policy)");
}

static void test_client_survives_garbage(void)
{
    world w;
    recorder r = {0};
    phx_client *agent = NULL;
    if (!world_start(&w, 0))
        goto out;
    phx_options o = world_options(&w, 1, &r);
    agent = start_client(&o, &r);
    if (!agent || !agent_joins(&w, agent))
        goto out;
    control(&w, "{\"action\":\"garbage\"}");
    phx_client *one[] = {agent};
    phx_stats st;
    int ok;
    /* two undecodable frames; a non-object payload on each joined topic is
     * a valid push with {} */
    PUMP_UNTIL(ok, one, 1, 3000, (phx_stats_get(agent, &st), st.frames_rejected >= 2 &&
                                                                  r.npushes >= 4));
    UNIT_CHECK(ok && st.frames_rejected == 2, "malformed frames dropped: %u", st.frames_rejected);
    UNIT_CHECK(count_pushes(&r, w.topic_chat, "message_created", NULL) == 1 && r.pushes[0].empty,
               "non-object payload delivered as {}");
    UNIT_CHECK(st.state == PHX_OPEN && st.generation == 1 && st.disconnects == 0,
               "the socket stays up");
    send_mention(&w, "marker:after-garbage");
    PUMP_UNTIL(ok, one, 1, 5000, count_pushes(&r, w.topic_chat, "message_created",
                                              "marker:after-garbage") == 1);
    UNIT_CHECK(ok, "pushes still arrive after garbage");
out:
    phx_client_free(agent);
    world_stop(&w);
}

/* A port nobody listens on: bound failure, whichever way the caller waits. */
static void test_client_closed_port_fails_in_time(void)
{
    recorder r = {0};
    redact_clear();
    phx_options o;
    phx_options_init(&o);
    o.ws_url = "ws://127.0.0.1:9/api/v1/socket/websocket"; /* discard: closed here */
    o.api_key = "closed-port-key-0001";
    o.max_attempts = 3;
    o.backoff.base_ms = WORLD_BACKOFF_BASE_MS; /* the same give-up, without the SDK's waits */
    o.on_state = rec_state;
    o.ud = &r;
    phx_client *c = start_client(&o, &r);
    if (!c)
        return;
    char err[ERR_BUFSZ] = "";
    int64_t t0 = clock_mono_ms();
    err_code rc = phx_join(c, "chat_room:x", 5000, err);
    int64_t took = clock_mono_ms() - t0;
    UNIT_CHECK(rc == ERR_CLOSED && strstr(err, "3 failed connection attempts"),
               "join ends when the client gives up: %s %s", err_str(rc), err);
    UNIT_CHECK(took < 4000, "within the backoff of 3 attempts (%lld ms)", (long long)took);
    UNIT_CHECK(count_states(&r, PHX_GAVE_UP) == 1 && count_states(&r, PHX_CONNECTED) == 0,
               "one PHX_GAVE_UP, never connected");
    phx_stats st;
    phx_stats_get(c, &st);
    UNIT_CHECK(st.connect_failures == 3 && st.generation == 0, "3 failed attempts: %u",
               st.connect_failures);
    phx_client_free(c);

    /* unlimited retries: the join's own timeout bounds it */
    o.max_attempts = 0;
    memset(&r, 0, sizeof r);
    c = start_client(&o, &r);
    if (!c)
        return;
    t0 = clock_mono_ms();
    rc = phx_join(c, "chat_room:x", 800, err);
    took = clock_mono_ms() - t0;
    UNIT_CHECK(rc == ERR_TIMEOUT && strstr(err, "did not open") && strstr(err, "Unable to connect"),
               "timeout names the connect error: %s", err);
    UNIT_CHECK(took >= 750 && took < 1500, "bounded by the join timeout (%lld ms)", (long long)took);
    phx_client_free(c);
}

/* The probe's case: reconnect off, the socket drops mid-wait. */
static void test_client_drop_with_reconnect_off(void)
{
    world w;
    recorder r = {0};
    phx_client *user = NULL;
    if (!world_start(&w, 0))
        goto out;
    phx_options o = world_options(&w, 0, &r);
    o.reconnect = 0;
    user = start_client(&o, &r);
    if (!user || !join_ok(user, w.topic_chat))
        goto out;
    control(&w, "{\"action\":\"drop_ws\"}");
    char err[ERR_BUFSZ] = "";
    err_code rc = ERR_OK;
    int64_t deadline = clock_mono_ms() + 3000;
    while (rc == ERR_OK && clock_mono_ms() < deadline)
        rc = phx_service(user, 50, err);
    UNIT_CHECK(rc == ERR_CLOSED && strstr(err, "reconnect is off"),
               "phx_service reports the drop: %s %s", err_str(rc), err);
    UNIT_CHECK(count_states(&r, PHX_DISCONNECTED) == 1 && count_states(&r, PHX_GAVE_UP) == 1,
               "DISCONNECTED then GAVE_UP");
    UNIT_CHECK(phx_leave(user, w.topic_chat, 0, err) == ERR_CLOSED, "leave after the end: %s", err);
    UNIT_CHECK(phx_close(user, err) == ERR_OK, "close after the end");
out:
    phx_client_free(user);
    world_stop(&w);
}

/* A refused upgrade: the HTTP status reaches the error, the log has the
 * SDK's layout and never the key. */
static void test_client_log_and_refused_upgrade(void)
{
    world w = {0};
    recorder r = {0};
    phx_client *c = NULL;
    char *dir = tk_tmpdir("phx-log");
    char *path = tk_path(dir, "client.log");
    FILE *log = fopen(path, "w");
    if (!UNIT_CHECK(log != NULL, "log file") || !world_start(&w, 0))
        goto out;
    phx_options o = world_options(&w, 0, &r);
    o.api_key = "not-a-band-key-000001";
    o.max_attempts = 1;
    o.log = log;
    c = start_client(&o, &r);
    char err[ERR_BUFSZ] = "";
    err_code rc = c ? phx_join(c, w.topic_chat, 3000, err) : ERR_USAGE;
    UNIT_CHECK(rc == ERR_CLOSED && strstr(err, "HTTP 403"), "refusal names the status: %s %s",
               err_str(rc), err);
    phx_client_free(c);
    c = NULL;
    fclose(log);
    log = NULL;
    char *text = tk_read(path, NULL);
    if (!UNIT_CHECK(text != NULL, "log written"))
        goto out;
    UNIT_CHECK(strstr(text, "not-a-band-key-000001") == NULL, "the key never reaches the log");
    UNIT_CHECK(strstr(text, " WARNING phx: Gave up after 1 failed connection attempts") != NULL,
               "the give-up line: %s", text);
    int64_t at = 0;
    char stamp[24];
    snprintf(stamp, sizeof stamp, "%.23s", text);
    UNIT_CHECK(clock_parse_iso(stamp, &at) == ERR_OK && at > 0 && text[23] == ' ',
               "lines start with the SDK's asctime: '%s'", stamp);
    free(text);
out:
    if (log)
        fclose(log);
    phx_client_free(c);
    world_stop(&w);
    tk_rmtree(dir);
    free(path);
    free(dir);
}

/* ---- a scripted WebSocket server, for what the fake never sends -------- */

/* One connection at a time on 127.0.0.1, on its own thread: it answers
 * the upgrade, then hands each client text frame to the test's script,
 * which answers with mini_text / mini_frame. Raw sockets (optionally in
 * TLS), so the test controls every byte (null join_refs, fragments,
 * binary frames). */
typedef struct mini_ws mini_ws;
typedef void (*mini_script)(mini_ws *m, const phx_frame *f);

struct mini_ws {
    int listen_fd;
    int fd;
    int port;
    pthread_t thread;
    atomic_int stop;
    atomic_int drop;           /* test asks: end the connection without a close frame */
    atomic_int connections;    /* upgrades answered so far */
    char request[4096];        /* the last upgrade request */
    mini_script script;
    SSL_CTX *tls;              /* wss when set */
    SSL *ssl;                  /* the connection's, when tls */
    atomic_int tls_failures;   /* handshakes the client broke off */
};

/* strcasestr is not POSIX. */
static const char *find_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return hay;
    return NULL;
}

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads exactly len bytes unless the test stops the server or the peer
 * goes away; polls so `stop` and `drop` are seen within 50 ms. */
static int read_all(mini_ws *m, void *buf, size_t len)
{
    char *p = buf;
    while (len) {
        struct pollfd pfd = {.fd = m->fd, .events = POLLIN};
        if (m->stop || m->drop)
            return -1;
        if (!(m->ssl && SSL_pending(m->ssl)) && poll(&pfd, 1, 50) <= 0)
            continue;
        ssize_t n = m->ssl ? SSL_read(m->ssl, p, (int)len) : read(m->fd, p, len);
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int mini_write(mini_ws *m, const void *buf, size_t len)
{
    if (!m->ssl)
        return write_all(m->fd, buf, len);
    return SSL_write(m->ssl, buf, (int)len) == (int)len ? 0 : -1;
}

static void mini_frame(mini_ws *m, int opcode, int fin, const char *data, size_t len)
{
    unsigned char head[10];
    size_t h = 2;
    head[0] = (unsigned char)((fin ? 0x80 : 0) | opcode);
    if (len < 126) {
        head[1] = (unsigned char)len;
    } else {
        head[1] = 126;
        head[2] = (unsigned char)(len >> 8);
        head[3] = (unsigned char)len;
        h = 4;
    }
    if (mini_write(m, head, h) == 0)
        mini_write(m, data, len);
}

static void mini_text(mini_ws *m, const char *text)
{
    mini_frame(m, 1, 1, text, strlen(text));
}

/* Answers the upgrade; 0 when it was one. */
static int mini_handshake(mini_ws *m)
{
    size_t n = 0;
    m->request[0] = '\0';
    while (n + 1 < sizeof m->request && !strstr(m->request, "\r\n\r\n")) {
        if (read_all(m, m->request + n, 1) != 0)
            return -1;
        m->request[++n] = '\0';
    }
    const char *k = find_nocase(m->request, "Sec-WebSocket-Key:");
    if (!k)
        return -1;
    k += strlen("Sec-WebSocket-Key:");
    while (*k == ' ')
        k++;
    char material[128];
    int klen = (int)strcspn(k, "\r\n");
    snprintf(material, sizeof material, "%.*s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", klen, k);
    unsigned char sha[EVP_MAX_MD_SIZE];
    unsigned int shalen = 0;
    unsigned char accept[64];
    EVP_Digest(material, strlen(material), sha, &shalen, EVP_sha1(), NULL);
    EVP_EncodeBlock(accept, sha, (int)shalen);
    char reply[256];
    snprintf(reply, sizeof reply,
             "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
             "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", accept);
    m->connections++;
    return mini_write(m, reply, strlen(reply));
}

/* Reads client frames until the connection ends; text goes to the script. */
static void mini_serve(mini_ws *m)
{
    for (;;) {
        unsigned char h[2], mask[4];
        if (read_all(m, h, 2) != 0)
            return;
        size_t len = h[1] & 0x7f;
        if (len == 126) {
            unsigned char ext[2];
            if (read_all(m, ext, 2) != 0)
                return;
            len = (size_t)ext[0] << 8 | ext[1];
        } else if (len == 127) {
            return; /* our client never sends 64 KiB frames */
        }
        char *data = malloc(len + 1);
        if (!data || read_all(m, mask, 4) != 0 || read_all(m, data, len) != 0) {
            free(data);
            return;
        }
        for (size_t i = 0; i < len; i++)
            data[i] ^= (char)mask[i % 4];
        data[len] = '\0';
        int opcode = h[0] & 0x0f;
        phx_frame f;
        char err[ERR_BUFSZ];
        if (opcode == 1 && m->script && phx_frame_decode(data, len, &f, err) == ERR_OK) {
            m->script(m, &f);
            phx_frame_clear(&f);
        } else if (opcode == 9) {
            mini_frame(m, 10, 1, data, len);
        }
        free(data);
        if (opcode == 8) {
            mini_frame(m, 8, 1, "\x03\xe8", 2);
            return;
        }
    }
}

static void *mini_main(void *arg)
{
    mini_ws *m = arg;
    while (!m->stop) {
        struct pollfd pfd = {.fd = m->listen_fd, .events = POLLIN};
        if (poll(&pfd, 1, 50) <= 0)
            continue;
        m->fd = accept(m->listen_fd, NULL, NULL);
        if (m->fd < 0)
            continue;
        m->drop = 0;
        if (m->tls) {
            m->ssl = SSL_new(m->tls);
            SSL_set_fd(m->ssl, m->fd);
            if (SSL_accept(m->ssl) != 1) {
                m->tls_failures++;
                SSL_free(m->ssl);
                m->ssl = NULL;
            }
        }
        if ((!m->tls || m->ssl) && mini_handshake(m) == 0)
            mini_serve(m);
        SSL_free(m->ssl); /* NULL-safe */
        m->ssl = NULL;
        close(m->fd);
        m->fd = -1;
    }
    return NULL;
}

static int listen_loopback(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 4) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

static int mini_start(mini_ws *m, mini_script script, SSL_CTX *tls)
{
    memset(m, 0, sizeof *m);
    m->fd = -1;
    m->script = script;
    m->tls = tls;
    m->listen_fd = listen_loopback(&m->port);
    if (!UNIT_CHECK(m->listen_fd >= 0, "scripted server listens"))
        return 0;
    if (pthread_create(&m->thread, NULL, mini_main, m) != 0) {
        close(m->listen_fd);
        return UNIT_CHECK(0, "scripted server thread");
    }
    return 1;
}

static void mini_stop(mini_ws *m)
{
    m->stop = 1;
    pthread_join(m->thread, NULL);
    close(m->listen_fd);
}

static void reply_to(mini_ws *m, const phx_frame *f, const char *status_json)
{
    char text[512];
    snprintf(text, sizeof text, "[\"%s\",\"%s\",\"%s\",\"phx_reply\",%s]", f->join_ref ? f->join_ref : "",
             f->ref ? f->ref : "", f->topic, status_json);
    mini_text(m, text);
}

/* Joins are answered ok, then pushes the C client must accept (null and
 * current join_ref, fragmented) or drop (another join_ref, binary). */
static void script_pushes(mini_ws *m, const phx_frame *f)
{
    if (strcmp(f->event, "phx_join") != 0)
        return;
    reply_to(m, f, "{\"status\":\"ok\",\"response\":{}}");
    char text[512];
    snprintf(text, sizeof text, "[null,null,\"%s\",\"ev_null\",{\"content\":\"n\"}]", f->topic);
    mini_text(m, text);
    snprintf(text, sizeof text, "[\"999\",null,\"%s\",\"ev_wrong\",{}]", f->topic);
    mini_text(m, text);
    snprintf(text, sizeof text, "[\"%s\",null,\"%s\",\"ev_frag\",{\"content\":\"%s\"}]",
             f->join_ref, f->topic, "fragmented-content");
    size_t half = strlen(text) / 2;
    mini_frame(m, 1, 0, text, half);
    mini_frame(m, 0, 1, text + half, strlen(text) - half);
    mini_frame(m, 2, 1, "\x01\x02", 2);
    snprintf(text, sizeof text, "[null,null,\"other:topic\",\"ev_unjoined\",{}]");
    mini_text(m, text);
    snprintf(text, sizeof text, "[\"%s\",null,\"%s\",\"ev_last\",{}]", f->join_ref, f->topic);
    mini_text(m, text);
}

static phx_options mini_options(const mini_ws *m, char *url, size_t cap, recorder *rec)
{
    snprintf(url, cap, "%s://127.0.0.1:%d/socket?keep=1", m->tls ? "wss" : "ws", m->port);
    phx_options o;
    phx_options_init(&o);
    o.ws_url = url;
    o.api_key = "mini-server-key-01";
    o.agent_id = "agent-7";
    o.join_timeout_ms = 2000;
    o.open_timeout_ms = 2000;
    o.backoff.base_ms = 100;
    o.backoff.cap_ms = 300;
    o.on_push = rec_push;
    o.on_state = rec_state;
    o.ud = rec;
    o.log = getenv("PHX_TEST_LOG") ? stderr : NULL;
    return o;
}

static void test_client_push_acceptance(void)
{
    mini_ws m;
    recorder r = {0};
    char url[128];
    redact_clear();
    if (!mini_start(&m, script_pushes, NULL))
        return;
    phx_options o = mini_options(&m, url, sizeof url, &r);
    phx_client *c = start_client(&o, &r);
    if (!c || !join_ok(c, "room:1"))
        goto out;
    phx_client *one[] = {c};
    int ok;
    PUMP_UNTIL(ok, one, 1, 3000, count_pushes(&r, NULL, "ev_last", NULL) == 1);
    UNIT_CHECK(ok, "the last push arrived");
    UNIT_CHECK(r.npushes == 3 && strcmp(r.pushes[0].event, "ev_null") == 0 &&
                   strcmp(r.pushes[1].event, "ev_frag") == 0,
               "null join_ref accepted, other join_ref and unjoined topic dropped (%d pushes)",
               r.npushes);
    UNIT_CHECK(count_pushes(&r, "room:1", "ev_frag", "fragmented-content") == 1,
               "a fragmented message is reassembled");
    phx_stats st;
    phx_stats_get(c, &st);
    UNIT_CHECK(st.frames_rejected == 1, "the binary frame is rejected: %u", st.frames_rejected);
    /* what went on the wire */
    UNIT_CHECK(strstr(m.request, "GET /socket?keep=1&api_key=mini-server-key-01&vsn=2.0.0"
                                 "&agent_id=agent-7 HTTP/1.1") != NULL,
               "request line: %.120s", m.request);
    UNIT_CHECK(find_nocase(m.request, "\r\nx-api-key: mini-server-key-01\r\n") != NULL,
               "x-api-key header sent");
    UNIT_CHECK(find_nocase(m.request, "\r\nOrigin:") == NULL, "no Origin header");
out:
    phx_client_free(c);
    mini_stop(&m);
}

/* Second connection: "b" is refused, "c" gets no answer at all. */
static void script_rejoins(mini_ws *m, const phx_frame *f)
{
    if (strcmp(f->event, "phx_join") != 0)
        return;
    if (m->connections == 2 && strcmp(f->topic, "b") == 0)
        reply_to(m, f, "{\"status\":\"error\",\"response\":{\"reason\":\"gone\"}}");
    else if (!(m->connections == 2 && strcmp(f->topic, "c") == 0))
        reply_to(m, f, "{\"status\":\"ok\",\"response\":{}}");
}

static void test_client_rejoin_failures(void)
{
    mini_ws m;
    recorder r = {0};
    char url[128];
    redact_clear();
    if (!mini_start(&m, script_rejoins, NULL))
        return;
    phx_options o = mini_options(&m, url, sizeof url, &r);
    o.join_timeout_ms = 500;
    phx_client *c = start_client(&o, &r);
    if (!c || !join_ok(c, "a") || !join_ok(c, "b") || !join_ok(c, "c"))
        goto out;
    m.drop = 1;
    phx_client *one[] = {c};
    int ok;
    PUMP_UNTIL(ok, one, 1, 4000, count_states(&r, PHX_RECONNECTED) == 1);
    if (!UNIT_CHECK(ok, "reconnected although one rejoin was refused and one unanswered"))
        goto out;
    const seen_state *f = last_state(&r, PHX_REJOIN_FAILED);
    UNIT_CHECK(f && strcmp(f->topic, "b") == 0 && strcmp(f->reason, "gone") == 0,
               "PHX_REJOIN_FAILED for b with the server's reason");
    UNIT_CHECK(r.nstates == 4 && r.states[1].event == PHX_DISCONNECTED &&
                   r.states[2].event == PHX_REJOIN_FAILED && r.states[3].event == PHX_RECONNECTED,
               "DISCONNECTED, REJOIN_FAILED, RECONNECTED (%d states)", r.nstates);
    UNIT_CHECK(phx_is_joined(c, "a") && !phx_is_joined(c, "b") && !phx_is_joined(c, "c"),
               "a rejoined, b dropped, c waiting");
    char err[ERR_BUFSZ];
    UNIT_CHECK(phx_leave(c, "b", 0, err) == ERR_NOTFOUND, "b is forgotten");
    /* the unanswered one is retried on the next reconnect */
    m.drop = 1;
    PUMP_UNTIL(ok, one, 1, 4000, count_states(&r, PHX_RECONNECTED) == 2);
    UNIT_CHECK(ok && phx_is_joined(c, "a") && phx_is_joined(c, "c"),
               "c rejoined on the third connection");
out:
    phx_client_free(c);
    mini_stop(&m);
}

/* ---- through an HTTP CONNECT proxy ---------------------------------------- */

/* A one-tunnel-at-a-time CONNECT proxy on loopback (IPv4 or IPv6) that
 * records what it was asked and what went through, answering like the
 * sandbox's proxy ("HTTP/1.0 200 OK", no headers). */
typedef struct mini_proxy {
    int listen_fd;
    int port;
    pthread_t thread;
    atomic_int stop;
    atomic_int tunnels;
    char head[2048];  /* the CONNECT request */
    char inner[2048]; /* the first bytes through the tunnel */
} mini_proxy;

static int dial_loopback(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((unsigned short)port);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Copies bytes both ways until a side closes or the test stops us. */
static void relay(mini_proxy *p, int a, int b)
{
    size_t kept = 0;
    char buf[4096];
    while (!p->stop) {
        struct pollfd fds[2] = {{.fd = a, .events = POLLIN}, {.fd = b, .events = POLLIN}};
        if (poll(fds, 2, 50) <= 0)
            continue;
        for (int i = 0; i < 2; i++) {
            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n <= 0 || write_all(fds[1 - i].fd, buf, (size_t)n) != 0)
                return;
            if (i == 0 && kept + 1 < sizeof p->inner) {
                size_t take = (size_t)n < sizeof p->inner - 1 - kept ? (size_t)n
                                                                     : sizeof p->inner - 1 - kept;
                memcpy(p->inner + kept, buf, take);
                kept += take;
                p->inner[kept] = '\0';
            }
        }
    }
}

static void proxy_one(mini_proxy *p, int client)
{
    size_t n = 0;
    p->head[0] = '\0';
    while (n + 1 < sizeof p->head && !strstr(p->head, "\r\n\r\n")) {
        if (read(client, p->head + n, 1) != 1)
            return;
        p->head[++n] = '\0';
    }
    char target[256] = "";
    sscanf(p->head, "CONNECT %255s", target);
    const char *port_at = strrchr(target, ':');
    int upstream = port_at ? dial_loopback(atoi(port_at + 1)) : -1;
    if (upstream < 0)
        return;
    p->tunnels++;
    const char *ok = "HTTP/1.0 200 OK\r\n\r\n";
    if (write_all(client, ok, strlen(ok)) == 0)
        relay(p, client, upstream);
    close(upstream);
}

static void *proxy_main(void *arg)
{
    mini_proxy *p = arg;
    while (!p->stop) {
        struct pollfd pfd = {.fd = p->listen_fd, .events = POLLIN};
        if (poll(&pfd, 1, 50) <= 0)
            continue;
        int client = accept(p->listen_fd, NULL, NULL);
        if (client < 0)
            continue;
        proxy_one(p, client);
        close(client);
    }
    return NULL;
}

static int listen_loopback6(int *port)
{
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 a = {0};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    socklen_t alen = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 4) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(a.sin6_port);
    return fd;
}

static int proxy_start(mini_proxy *p, int ipv6)
{
    memset(p, 0, sizeof *p);
    p->listen_fd = ipv6 ? listen_loopback6(&p->port) : listen_loopback(&p->port);
    if (!UNIT_CHECK(p->listen_fd >= 0, "proxy listens (ipv6=%d)", ipv6))
        return 0;
    if (pthread_create(&p->thread, NULL, proxy_main, p) != 0) {
        close(p->listen_fd);
        return UNIT_CHECK(0, "proxy thread");
    }
    return 1;
}

static void proxy_stop(mini_proxy *p)
{
    p->stop = 1;
    pthread_join(p->thread, NULL);
    close(p->listen_fd);
}

static void script_join_ok(mini_ws *m, const phx_frame *f)
{
    if (strcmp(f->event, "phx_join") == 0)
        reply_to(m, f, "{\"status\":\"ok\",\"response\":{}}");
}

/* Joins once through `proxy` (NULL = decide from the environment). */
static phx_client *join_via(mini_ws *m, const netenv_proxy *proxy, recorder *r, char *url,
                            size_t cap)
{
    phx_options o = mini_options(m, url, cap, r);
    o.proxy = proxy;
    phx_client *c = start_client(&o, r);
    if (c && !join_ok(c, "room:1")) {
        phx_client_free(c);
        c = NULL;
    }
    return c;
}

static void test_client_through_proxy(void)
{
    mini_ws m;
    mini_proxy p4, p6;
    recorder r = {0};
    char url[128];
    redact_clear();
    if (!mini_start(&m, script_join_ok, NULL))
        return;
    if (proxy_start(&p4, 0)) {
        netenv_proxy px = {1, "127.0.0.1", p4.port, "proxyuser:proxypass"};
        phx_client *c = join_via(&m, &px, &r, url, sizeof url);
        char want[64];
        snprintf(want, sizeof want, "CONNECT 127.0.0.1:%d HTTP/1.1\r\n", m.port);
        UNIT_CHECK(c && p4.tunnels == 1 && strncmp(p4.head, want, strlen(want)) == 0,
                   "one CONNECT to the server: %.60s", p4.head);
        /* base64("proxyuser:proxypass") */
        UNIT_CHECK(find_nocase(p4.head, "Proxy-authorization: basic "
                                        "cHJveHl1c2VyOnByb3h5cGFzcw==\r\n") != NULL,
                   "credentials sent as basic auth");
        UNIT_CHECK(strstr(p4.inner, "GET /socket?keep=1&api_key=") == p4.inner &&
                       find_nocase(p4.inner, "\r\nx-api-key: mini-server-key-01\r\n"),
                   "the upgrade went through the tunnel");
        phx_client_free(c);
        proxy_stop(&p4);
    }
    if (proxy_start(&p6, 1)) {
        netenv_proxy px = {1, "::1", p6.port, ""};
        phx_client *c = join_via(&m, &px, &r, url, sizeof url);
        UNIT_CHECK(c && p6.tunnels == 1, "an IPv6 proxy works (tunnels %d)", p6.tunnels);
        UNIT_CHECK(!find_nocase(p6.head, "Proxy-authorization"), "no credentials, no header");
        phx_client_free(c);
        proxy_stop(&p6);
    }
    mini_stop(&m);
}

static void test_client_proxy_from_environment(void)
{
    mini_ws m;
    mini_proxy p;
    recorder r = {0};
    char url[128], value[64];
    redact_clear();
    if (!mini_start(&m, script_join_ok, NULL))
        return;
    if (!proxy_start(&p, 0)) {
        mini_stop(&m);
        return;
    }
    snprintf(value, sizeof value, "http://127.0.0.1:%d", p.port);
    setenv("HTTP_PROXY", value, 1); /* lws itself reads only lowercase http_proxy */
    phx_client *c = join_via(&m, NULL, &r, url, sizeof url);
    UNIT_CHECK(c && p.tunnels == 1, "HTTP_PROXY honoured (tunnels %d)", p.tunnels);
    phx_client_free(c);

    /* no_proxy wins, even over the lowercase http_proxy lws would read */
    setenv("http_proxy", value, 1);
    setenv("no_proxy", "localhost,127.0.0.1", 1);
    c = join_via(&m, NULL, &r, url, sizeof url);
    UNIT_CHECK(c && p.tunnels == 1, "no_proxy: direct (tunnels %d)", p.tunnels);
    phx_client_free(c);

    setenv("http_proxy", "http://127.0.0.1:9", 1); /* a dead proxy must not matter */
    c = join_via(&m, NULL, &r, url, sizeof url);
    UNIT_CHECK(c != NULL, "no_proxy: direct although http_proxy is dead");
    phx_client_free(c);

    unsetenv("no_proxy");
    setenv("http_proxy", "not a proxy", 1);
    phx_options o = mini_options(&m, url, sizeof url, &r);
    char err[ERR_BUFSZ] = "";
    UNIT_CHECK(phx_client_new(&o, &c, err) == ERR_CONFIG && strstr(err, "http_proxy") &&
                   !strstr(err, "not a proxy"),
               "a malformed proxy variable is named, not quoted: %s", err);
    unsetenv("http_proxy");
    unsetenv("HTTP_PROXY");
    proxy_stop(&p);
    mini_stop(&m);
}

/* ---- wss ------------------------------------------------------------------- */

/* A fresh self-signed certificate for 127.0.0.1, written as PEM to
 * cert_path (the client's ca_file), and a server context using it. */
static SSL_CTX *make_tls(const char *cert_path)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    FILE *fp = fopen(cert_path, "w");
    int ok = key && x && ctx && fp;
    if (ok) {
        X509_set_version(x, 2);
        ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
        X509_gmtime_adj(X509_getm_notBefore(x), -60);
        X509_gmtime_adj(X509_getm_notAfter(x), 3600);
        X509_set_pubkey(x, key);
        X509_NAME *name = X509_get_subject_name(x);
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"phx-test",
                                   -1, -1, 0);
        X509_set_issuer_name(x, name);
        X509V3_CTX v3;
        X509V3_set_ctx_nodb(&v3);
        X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
        X509_EXTENSION *san = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name,
                                                  "IP:127.0.0.1,DNS:localhost");
        ok = san && X509_add_ext(x, san, -1) && X509_sign(x, key, EVP_sha256()) &&
             PEM_write_X509(fp, x) && SSL_CTX_use_certificate(ctx, x) == 1 &&
             SSL_CTX_use_PrivateKey(ctx, key) == 1;
        X509_EXTENSION_free(san);
    }
    if (fp)
        fclose(fp);
    X509_free(x);
    EVP_PKEY_free(key);
    if (!ok) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static void test_client_wss(void)
{
    char *dir = tk_tmpdir("phx-tls");
    char *cert = tk_path(dir, "cert.pem");
    SSL_CTX *tls = make_tls(cert);
    mini_ws m;
    recorder r = {0};
    char url[128];
    redact_clear();
    if (!UNIT_CHECK(tls != NULL, "test certificate") || !mini_start(&m, script_join_ok, tls))
        goto out;
    phx_options o = mini_options(&m, url, sizeof url, &r);
    o.ca_file = cert;
    phx_client *c = start_client(&o, &r);
    UNIT_CHECK(c && join_ok(c, "room:1"), "wss with the server's CA in ca_file");
    phx_client_free(c);

    /* the system store does not know our CA: a bounded failure that says why */
    memset(&r, 0, sizeof r);
    o = mini_options(&m, url, sizeof url, &r);
    o.max_attempts = 1;
    c = start_client(&o, &r);
    char err[ERR_BUFSZ] = "";
    err_code rc = c ? phx_join(c, "room:1", 3000, err) : ERR_USAGE;
    UNIT_CHECK(rc == ERR_CLOSED && strstr(err, "certificate"),
               "an untrusted certificate is named in the error: %s %s", err_str(rc), err);
    int64_t until = clock_mono_ms() + 2000; /* the server thread may lag behind */
    while (m.tls_failures == 0 && clock_mono_ms() < until)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    UNIT_CHECK(m.tls_failures >= 1, "the handshake was broken off (%d)", (int)m.tls_failures);
    phx_client_free(c);
    mini_stop(&m);
out:
    SSL_CTX_free(tls);
    tk_rmtree(dir);
    free(cert);
    free(dir);
}

const unit_case unit_cases[] = {
    {"frame_decodes_a_push", test_frame_decodes_a_push},
    {"frame_null_refs_and_reply", test_frame_null_refs_and_reply},
    {"frame_non_object_payload_is_empty_object", test_frame_non_object_payload_is_empty_object},
    {"frame_rejects_garbage", test_frame_rejects_garbage},
    {"frame_bounds_and_length", test_frame_bounds_and_length},
    {"frame_encode_round_trip", test_frame_encode_round_trip},
    {"frame_encode_refuses_invalid", test_frame_encode_refuses_invalid},
    {"url_user_and_agent", test_url_user_and_agent},
    {"url_query_rebuild", test_url_query_rebuild},
    {"url_encodes_key_and_agent", test_url_encodes_key_and_agent},
    {"url_rejects", test_url_rejects},
    {"close_codes", test_close_codes},
    {"backoff_delays", test_backoff_delays},
    {"backoff_close_code_floors", test_backoff_close_code_floors},
    {"client_rejects_bad_options", test_client_rejects_bad_options},
    {"client_lifecycle_without_server", test_client_lifecycle_without_server},
    {"client_joins_and_receives_pushes", test_client_joins_and_receives_pushes},
    {"client_join_refused", test_client_join_refused},
    {"client_leave", test_client_leave},
    {"client_heartbeat", test_client_heartbeat},
    {"client_recovers_from_drop", test_client_recovers_from_drop},
    {"client_recovers_from_1011", test_client_recovers_from_1011},
    {"client_recovers_from_1012", test_client_recovers_from_1012},
    {"client_recovers_after_refusals", test_client_recovers_after_refusals},
    {"client_1000_is_final", test_client_1000_is_final},
    {"client_1008_is_terminal", test_client_1008_is_terminal},
    {"client_survives_garbage", test_client_survives_garbage},
    {"client_closed_port_fails_in_time", test_client_closed_port_fails_in_time},
    {"client_drop_with_reconnect_off", test_client_drop_with_reconnect_off},
    {"client_log_and_refused_upgrade", test_client_log_and_refused_upgrade},
    {"client_push_acceptance", test_client_push_acceptance},
    {"client_rejoin_failures", test_client_rejoin_failures},
    {"client_through_proxy", test_client_through_proxy},
    {"client_proxy_from_environment", test_client_proxy_from_environment},
    {"client_wss", test_client_wss},
    {NULL, NULL},
};
