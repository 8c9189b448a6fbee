/* band_rest, band_envelope, band_http: the Band REST client.
 *
 * Three layers of cases:
 * - pure: the envelope parser (including garbage and hostile bodies), URL
 *   joining and query encoding, client creation refusals;
 * - wire: a scripted loopback responder (a thread answering canned HTTP
 *   responses) that records the exact requests, for what the fake Band
 *   server cannot show: request lines, headers, bodies, the trace;
 * - flow: the fake Band server (tests/lib/tk_band.h), every user and agent
 *   call in the smoke's order, and its fault controls for retries,
 *   Retry-After, timeouts and errors.
 * Loopback only; every wait is bounded.
 */
#include "band_envelope.h"
#include "band_http.h"
#include "band_rest.h"
#include "clock.h"
#include "redact.h"
#include "tk.h"
#include "tk_band.h"
#include "unit.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <openssl/crypto.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CANARY "sk-canary-7f3a9c1e5b2d4680aa"
#define MINTED "ak-minted-0d9e8f7a6b5c4d3e2f"

static int has(const char *hay, const char *needle)
{
    return hay && needle && strstr(hay, needle) != NULL;
}

static int starts(const char *text, const char *prefix)
{
    return strncmp(text, prefix, strlen(prefix)) == 0;
}

/* ---- pure: the envelope ---------------------------------------------------- */

static err_code parse(long status, const char *body, band_envelope *env, char *err)
{
    err[0] = '\0';
    return band_envelope_parse(status, body, body ? strlen(body) : 0, env, err);
}

static void test_envelope_data(void)
{
    band_envelope env;
    char err[ERR_BUFSZ];
    err_code rc = parse(200, "{\"data\":{\"id\":\"a1\"}}", &env, err);
    UNIT_CHECK(rc == ERR_OK, "rc %d: %s", rc, err);
    UNIT_CHECK(cJSON_IsObject(env.data), "data is the object");
    UNIT_CHECK(env.metadata == NULL && env.no_content == 0, "no metadata, has content");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(env.data, "id");
    UNIT_CHECK(cJSON_IsString(id) && strcmp(id->valuestring, "a1") == 0, "data.id read");
    band_envelope_free(&env);
    UNIT_CHECK(env.root == NULL && env.data == NULL, "free zeroes");

    rc = parse(201, " {\"data\": null} \n", &env, err);
    UNIT_CHECK(rc == ERR_OK && cJSON_IsNull(env.data), "null data is data; spaces around: %s", err);
    band_envelope_free(&env);
}

static void test_envelope_data_and_metadata(void)
{
    band_envelope env;
    char err[ERR_BUFSZ];
    err_code rc = parse(200,
                        "{\"data\":[{\"id\":\"a\"},{\"id\":\"b\"}],"
                        "\"metadata\":{\"has_more\":true,\"next_cursor\":\"c2\"}}",
                        &env, err);
    UNIT_CHECK(rc == ERR_OK, "rc %d: %s", rc, err);
    UNIT_CHECK(cJSON_GetArraySize(env.data) == 2, "two items");
    UNIT_CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(env.metadata, "has_more")),
               "metadata reachable");
    band_envelope_free(&env);

    rc = parse(200, "{\"data\":[],\"metadata\":null}", &env, err);
    UNIT_CHECK(rc == ERR_OK && env.metadata == NULL, "null metadata is no metadata: %s", err);
    band_envelope_free(&env);
}

static void test_envelope_error(void)
{
    band_envelope env;
    char err[ERR_BUFSZ];
    err_code rc = parse(401,
                        "{\"error\":{\"code\":\"unauthorized\",\"message\":\"Invalid API key\","
                        "\"request_id\":\"req-7\"}}",
                        &env, err);
    UNIT_CHECK(rc == ERR_HTTP, "rc %d", rc);
    UNIT_CHECK(strcmp(err, "HTTP 401 unauthorized: Invalid API key (request_id req-7)") == 0,
               "message: %s", err);
    UNIT_CHECK(strcmp(env.code, "unauthorized") == 0 && strcmp(env.request_id, "req-7") == 0,
               "code %s, request id %s", env.code, env.request_id);
    UNIT_CHECK(env.data == NULL, "no data on an error");
    band_envelope_free(&env);

    rc = parse(404, "{\"error\":{\"message\":\"Not found\"}}", &env, err);
    UNIT_CHECK(rc == ERR_HTTP && strcmp(err, "HTTP 404: Not found") == 0, "partial: %s", err);
    band_envelope_free(&env);
}

static void test_envelope_422_details(void)
{
    band_envelope env;
    char err[ERR_BUFSZ];
    err_code rc = parse(422,
                        "{\"error\":{\"code\":\"mentions_required\",\"message\":\"At least "
                        "one mention is required\",\"request_id\":\"r-422\",\"details\":"
                        "{\"/message/mentions\":[\"can't be blank\"]}}}",
                        &env, err);
    UNIT_CHECK(rc == ERR_HTTP, "rc %d", rc);
    UNIT_CHECK(strcmp(err, "HTTP 422 mentions_required: At least one mention is required "
                           "{\"/message/mentions\":[\"can't be blank\"]} (request_id r-422)") == 0,
               "message: %s", err);
    UNIT_CHECK(strcmp(env.code, "mentions_required") == 0, "code %s", env.code);
    band_envelope_free(&env);
}

static void test_envelope_not_json(void)
{
    band_envelope env;
    char err[ERR_BUFSZ];
    err_code rc = parse(502, "<html>\r\n<b>Bad Gateway</b>\r\n</html>\n", &env, err);
    UNIT_CHECK(rc == ERR_HTTP, "rc %d", rc);
    UNIT_CHECK(strcmp(err, "HTTP 502: <html>  <b>Bad Gateway</b>  </html> ") == 0,
               "control bytes become spaces: [%s]", err);
    band_envelope_free(&env);

    rc = parse(200, "<html>ok</html>", &env, err);
    UNIT_CHECK(rc == ERR_PROTOCOL && has(err, "not a JSON object") && !has(err, "html"),
               "a 2xx that is not JSON, never quoted: %s", err);
    band_envelope_free(&env);

    rc = parse(200, "{\"data\":1} trailing", &env, err);
    UNIT_CHECK(rc == ERR_PROTOCOL, "trailing garbage refused: %s", err);
    band_envelope_free(&env);

    static const char nul_inside[] = "{\"data\":1}\0{\"x\":2}";
    rc = band_envelope_parse(200, nul_inside, sizeof nul_inside - 1, &env, err);
    UNIT_CHECK(rc == ERR_PROTOCOL, "a NUL byte inside the body is not JSON: %s", err);
    band_envelope_free(&env);
}

static void test_envelope_wrong_shapes(void)
{
    static const char *const bodies[] = {
        "[1,2]", "\"data\"", "{\"id\":1}", "{\"data\":1,\"metadata\":[]}",
        "{\"data\":1,\"metadata\":\"x\"}", "null", "{",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        band_envelope env;
        char err[ERR_BUFSZ];
        err_code rc = parse(200, bodies[i], &env, err);
        UNIT_CHECK(rc == ERR_PROTOCOL, "%s: rc %d", bodies[i], rc);
        UNIT_CHECK(has(err, "HTTP 200"), "%s: message %s", bodies[i], err);
        UNIT_CHECK(env.data == NULL, "%s: no data handed out", bodies[i]);
        band_envelope_free(&env);
    }
}

static void test_envelope_empty_and_204(void)
{
    band_envelope env;
    char err[ERR_BUFSZ];
    UNIT_CHECK(parse(500, "", &env, err) == ERR_HTTP && strcmp(err, "HTTP 500 (empty body)") == 0,
               "empty 500: %s", err);
    band_envelope_free(&env);
    UNIT_CHECK(band_envelope_parse(503, NULL, 99, &env, err) == ERR_HTTP &&
                   strcmp(err, "HTTP 503 (empty body)") == 0,
               "NULL body counts as empty: %s", err);
    band_envelope_free(&env);
    UNIT_CHECK(parse(200, "", &env, err) == ERR_PROTOCOL && has(err, "empty body"),
               "empty 200: %s", err);
    band_envelope_free(&env);

    err_code rc = parse(204, "", &env, err);
    UNIT_CHECK(rc == ERR_OK && env.no_content == 1 && env.data == NULL, "204 is no content");
    band_envelope_free(&env);
    rc = parse(204, "garbage \x01\x02", &env, err);
    UNIT_CHECK(rc == ERR_OK && env.no_content == 1 && env.root == NULL, "204 ignores its body");
    band_envelope_free(&env);
}

static void test_envelope_status_range(void)
{
    static const long bad[] = {-1, 0, 99, 600, 1000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        band_envelope env;
        char err[ERR_BUFSZ];
        err_code rc = parse(bad[i], "{\"data\":1}", &env, err);
        UNIT_CHECK(rc == ERR_PROTOCOL && has(err, "invalid HTTP status"), "status %ld: %d %s",
                   bad[i], rc, err);
        band_envelope_free(&env);
    }
    band_envelope env;
    char err[ERR_BUFSZ];
    UNIT_CHECK(parse(301, "moved", &env, err) == ERR_HTTP && strcmp(err, "HTTP 301: moved") == 0,
               "a redirect is reported, not followed: %s", err);
    band_envelope_free(&env);
    UNIT_CHECK(band_envelope_parse(200, "{}", 2, NULL, err) == ERR_USAGE, "NULL out");
}

static void test_envelope_redacts_what_it_quotes(void)
{
    UNIT_CHECK(redact_add_secret(CANARY) == ERR_OK, "canary registered");
    band_envelope env;
    char err[ERR_BUFSZ];

    char body[600];
    snprintf(body, sizeof body, "{\"error\":{\"code\":\"bad\",\"message\":\"key %s refused\","
                                "\"request_id\":\"%s\"}}", CANARY, CANARY);
    parse(403, body, &env, err);
    UNIT_CHECK(!has(err, CANARY) && !has(err, "sk-canary") && has(err, REDACT_MASK),
               "envelope fields redacted: %s", err);
    UNIT_CHECK(!has(env.request_id, "sk-canary"), "request id field redacted: %s", env.request_id);
    band_envelope_free(&env);

    /* A secret straddling the excerpt's cut must not leave its front. */
    for (size_t at = 140; at < 170; at++) {
        memset(body, 'x', sizeof body);
        memcpy(body + at, CANARY, strlen(CANARY));
        body[400] = '\0';
        parse(500, body, &env, err);
        UNIT_CHECK(!has(err, "sk-can"), "secret at %zu leaked its front: %s", at, err);
        band_envelope_free(&env);
    }

    snprintf(body, sizeof body, "{\"data\":{\"api_key\":\"%s\"} oops", MINTED);
    parse(201, body, &env, err);
    UNIT_CHECK(!has(err, MINTED) && !has(err, "ak-minted"), "a 2xx body is never quoted: %s", err);
    band_envelope_free(&env);
}

/* Deterministic garbage: every status class, random bytes, truncations of
 * real bodies, deep nesting, a big body. The parser must return one of
 * its documented codes with a terminated message, and ASan watches the
 * exact-size heap copies for overreads. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int garbage_one(long status, const char *bytes, size_t len)
{
    char *copy = malloc(len ? len : 1);
    if (len)
        memcpy(copy, bytes, len);
    band_envelope env;
    char err[ERR_BUFSZ];
    memset(err, 'z', sizeof err);
    err[0] = '\0';
    err_code rc = band_envelope_parse(status, copy, len, &env, err);
    int ok = (rc == ERR_OK || rc == ERR_HTTP || rc == ERR_PROTOCOL) &&
             memchr(err, '\0', sizeof err) != NULL;
    if (rc == ERR_OK && status != 204)
        ok = ok && env.data != NULL;
    band_envelope_free(&env);
    free(copy);
    return ok;
}

static void test_envelope_survives_garbage(void)
{
    static const long statuses[] = {200, 201, 204, 400, 401, 422, 429, 500, 503};
    static const char *const seeds[] = {
        "{\"data\":{\"agent\":{\"id\":\"x\"},\"credentials\":{\"api_key\":\"k\"}},\"metadata\":{}}",
        "{\"error\":{\"code\":\"c\",\"message\":\"m\\u00e9\\ud83d\\ude00\",\"request_id\":\"r\","
        "\"details\":{\"/a\":[1,2.5e3,true,null]}}}",
    };
    char buf[512];
    int bad = 0;
    for (int round = 0; round < 3000; round++) {
        size_t len = (size_t)(rng() % sizeof buf);
        for (size_t i = 0; i < len; i++)
            buf[i] = (char)(rng() & 0xff);
        bad += !garbage_one(statuses[rng() % 9], buf, len);
    }
    for (size_t s = 0; s < 2; s++) {
        size_t n = strlen(seeds[s]);
        for (size_t cut = 0; cut <= n; cut++)
            for (size_t k = 0; k < 9; k++) {
                bad += !garbage_one(statuses[k], seeds[s], cut);
                memcpy(buf, seeds[s], n);
                buf[rng() % n] = (char)(rng() & 0xff); /* one flipped byte */
                bad += !garbage_one(statuses[k], buf, n);
            }
    }
    UNIT_CHECK(bad == 0, "%d garbage inputs got an undocumented answer", bad);

    size_t deep = 200000;
    char *nest = malloc(2 * deep);
    memset(nest, '[', deep);
    memset(nest + deep, ']', deep);
    UNIT_CHECK(garbage_one(200, nest, 2 * deep), "deep nesting");
    UNIT_CHECK(garbage_one(500, nest, 2 * deep), "deep nesting as an error");
    free(nest);

    size_t big = 4u << 20;
    char *huge = malloc(big);
    memset(huge, 'a', big);
    memcpy(huge, "{\"error\":{\"message\":\"", 21);
    UNIT_CHECK(garbage_one(500, huge, big), "4 MiB unterminated error body");
    band_envelope env;
    char err[ERR_BUFSZ];
    band_envelope_parse(500, huge, big, &env, err);
    UNIT_CHECK(strlen(err) < 200, "the excerpt stays short: %zu bytes", strlen(err));
    band_envelope_free(&env);
    free(huge);
}

/* tests/data/band: realistic bodies, named by the status they come with. */
static void test_envelope_samples(void)
{
    DIR *dir = opendir(SMOKE_TEST_DATA "/band");
    if (!UNIT_CHECK(dir != NULL, "cannot open %s/band", SMOKE_TEST_DATA))
        return;
    int parsed = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        long status = atol(e->d_name);
        if (status < 100)
            continue; /* ".", "..", README.md */
        char *path = tk_path(SMOKE_TEST_DATA "/band", e->d_name);
        size_t len = 0;
        char *body = tk_read(path, &len);
        band_envelope env;
        char err[ERR_BUFSZ] = "";
        err_code rc = band_envelope_parse(status, body, len, &env, err);
        if (status < 300)
            UNIT_CHECK(rc == ERR_OK && env.data, "%s: %d %s", e->d_name, rc, err);
        else
            UNIT_CHECK(rc == ERR_HTTP && starts(err, "HTTP "), "%s: %d %s", e->d_name, rc, err);
        band_envelope_free(&env);
        free(body);
        free(path);
        parsed++;
    }
    closedir(dir);
    UNIT_CHECK(parsed >= 7, "samples read: %d", parsed);
}

static void test_message_from_json(void)
{
    char *path = tk_path(SMOKE_TEST_DATA "/band", "200-next-message.json");
    size_t len = 0;
    char *body = tk_read(path, &len);
    band_envelope env;
    band_message m;
    char err[ERR_BUFSZ] = "";
    UNIT_CHECK(band_envelope_parse(200, body, len, &env, err) == ERR_OK, "%s", err);
    err_code rc = band_message_from_json(env.data, &m, err);
    UNIT_CHECK(rc == ERR_OK, "message: %s", err);
    UNIT_CHECK(strcmp(m.id, "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d") == 0 &&
                   strcmp(m.content, "@e2e-band-1a2b3c4d-sandbox marker:0123456789ab") == 0 &&
                   strcmp(m.message_type, "text") == 0 && strcmp(m.sender_type, "User") == 0 &&
                   strcmp(m.sender_name, "Smoke User") == 0 &&
                   strcmp(m.chat_room_id, "7e6d5c4b-3a29-4817-9f6e-5d4c3b2a1908") == 0,
               "fields read");
    UNIT_CHECK(m.inserted_at_ms == 1763378410284LL, "inserted_at %lld",
               (long long)m.inserted_at_ms);
    band_message_clear(&m);
    UNIT_CHECK(m.content == NULL && m.id[0] == '\0', "clear zeroes");
    band_envelope_free(&env);
    free(body);
    free(path);

    static const char *const bad[] = {
        "{\"content\":\"x\",\"message_type\":\"text\",\"sender_id\":\"u\",\"sender_type\":\"User\"}",
        "{\"id\":\"m\",\"message_type\":\"text\",\"sender_id\":\"u\",\"sender_type\":\"User\"}",
        "{\"id\":\"m\",\"content\":\"x\",\"message_type\":\"text\",\"sender_id\":\"u\","
        "\"sender_type\":\"User\",\"inserted_at\":\"yesterday\"}",
        "{\"id\":7,\"content\":\"x\"}",
        "[]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *obj = cJSON_Parse(bad[i]);
        rc = band_message_from_json(obj, &m, err);
        UNIT_CHECK(rc == ERR_PROTOCOL, "%s: %d %s", bad[i], rc, err);
        band_message_clear(&m);
        cJSON_Delete(obj);
    }
    UNIT_CHECK(band_message_from_json(NULL, &m, err) == ERR_PROTOCOL, "NULL object");
}

/* ---- pure: URLs, queries, client creation ----------------------------------- */

static void test_join_url(void)
{
    static const struct {
        const char *base, *path, *want;
    } good[] = {
        {"https://h", "/api/v1/x", "https://h/api/v1/x"},
        {"https://h/", "/api/v1/x", "https://h/api/v1/x"},
        {"https://h/band//", "/api/v1/x?a=1", "https://h/band/api/v1/x?a=1"},
        {"HTTP://127.0.0.1:8080/p", "/api/v1/me", "HTTP://127.0.0.1:8080/p/api/v1/me"},
        {"http://[::1]:9/", "/a", "http://[::1]:9/a"},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char *url = NULL, err[ERR_BUFSZ] = "";
        err_code rc = band_http_join_url(good[i].base, good[i].path, &url, err);
        UNIT_CHECK(rc == ERR_OK && url && strcmp(url, good[i].want) == 0, "%s + %s = %s (%s)",
                   good[i].base, good[i].path, url ? url : "(null)", err);
        free(url);
    }
    static const char *const bad_bases[] = {
        "", "h/x", "ftp://h", "https://", "https:///x", "https://:443", "https://h?x=1",
        "https://h#f", "https://h x", "https://h\t", "wss://h",
    };
    for (size_t i = 0; i < sizeof bad_bases / sizeof bad_bases[0]; i++) {
        char *url = (char *)"untouched", err[ERR_BUFSZ] = "";
        err_code rc = band_http_join_url(bad_bases[i], "/api", &url, err);
        UNIT_CHECK(rc == ERR_CONFIG && url == NULL, "base [%s] refused: %d", bad_bases[i], rc);
    }
    char *url = NULL, err[ERR_BUFSZ];
    UNIT_CHECK(band_http_join_url("https://h", "api/v1", &url, err) == ERR_USAGE, "relative path");
    UNIT_CHECK(band_http_join_url("https://h", "/a b", &url, err) == ERR_USAGE, "space in path");
    UNIT_CHECK(band_http_join_url(NULL, "/a", &url, err) == ERR_USAGE, "NULL base");
}

static void test_add_query(void)
{
    char path[64] = "/api/v1/me/agents";
    UNIT_CHECK(band_http_add_query(path, sizeof path, "name", "e2e-band-"), "fits");
    UNIT_CHECK(band_http_add_query(path, sizeof path, "cursor", "a b&c=d/\xc3\xa9~"), "fits");
    UNIT_CHECK(strcmp(path, "/api/v1/me/agents?name=e2e-band-&cursor=a%20b%26c%3Dd%2F%C3%A9~") == 0,
               "encoded: %s", path);
    char small[24] = "/x";
    UNIT_CHECK(!band_http_add_query(small, sizeof small, "k", "0123456789abcdefghij"),
               "overflow reported");
    UNIT_CHECK(strlen(small) < sizeof small, "left terminated: %s", small);
}

static void test_client_refusals(void)
{
    band_client *c = (band_client *)&c; /* junk, to see failures reset it */
    char err[ERR_BUFSZ];
    band_options o = band_options_default();
    UNIT_CHECK(o.timeout_ms == 30000 && o.max_retries == 0 && o.retry_creates == 0 &&
                   o.retry_base_ms == 500 && o.retry_cap_ms == 8000,
               "documented defaults");

    static const char *const prod[] = {"https://app.band.ai", "https://APP.band.ai/",
                                       "https://app.band.ai:443/x"};
    for (size_t i = 0; i < 3; i++) {
        err_code rc = band_client_new(prod[i], CANARY, NULL, &c, err);
        UNIT_CHECK(rc == ERR_PRODUCTION && c == NULL, "%s refused: %d %s", prod[i], rc, err);
    }
    UNIT_CHECK(band_client_new("https://staging.example", "short", NULL, &c, err) == ERR_USAGE,
               "a key redact cannot mask is refused");
    UNIT_CHECK(band_client_new("https://staging.example", "", NULL, &c, err) == ERR_USAGE, "empty key");
    UNIT_CHECK(band_client_new("ftp://staging.example", CANARY, NULL, &c, err) == ERR_CONFIG,
               "bad scheme: %s", err);
    o.timeout_ms = 0;
    UNIT_CHECK(band_client_new("https://s.example", CANARY, &o, &c, err) == ERR_USAGE, "timeout 0");
    o = band_options_default();
    o.max_retries = BAND_MAX_RETRIES + 1;
    UNIT_CHECK(band_client_new("https://s.example", CANARY, &o, &c, err) == ERR_USAGE, "retries");
    o = band_options_default();
    o.retry_cap_ms = o.retry_base_ms - 1;
    UNIT_CHECK(band_client_new("https://s.example", CANARY, &o, &c, err) == ERR_USAGE &&
                   has(err, "retry_base_ms"), "backoff cap below its base: %s", err);
    o.retry_base_ms = 0;
    UNIT_CHECK(band_client_new("https://s.example", CANARY, &o, &c, err) == ERR_USAGE,
               "no backoff at all");
    UNIT_CHECK(band_client_new("https://s.example", CANARY, NULL, NULL, err) == ERR_USAGE, "no out");
    UNIT_CHECK(!has(err, CANARY), "no message names the key");

    static const char fresh[] = "fresh-key-never-seen-1234";
    UNIT_CHECK(!redact_has_secret(fresh, strlen(fresh)), "not yet registered");
    UNIT_CHECK(band_client_new("https://staging.example/", fresh, NULL, &c, err) == ERR_OK && c,
               "created: %s", err);
    UNIT_CHECK(redact_has_secret(fresh, strlen(fresh)), "the key is registered at creation");
    UNIT_CHECK(band_last_result(c)->attempts == 0 && band_last_status(c) == 0, "nothing sent yet");
    band_client_free(c);
    band_client_free(NULL);
}

static void test_bad_arguments_never_send(void)
{
    band_client *c = NULL;
    char err[ERR_BUFSZ], id[BAND_ID_SZ];
    UNIT_CHECK(band_client_new("http://127.0.0.1:9", CANARY, NULL, &c, err) == ERR_OK, "%s", err);
    band_mention m = {"u-1", "user", NULL};
    band_message_page page;
    band_chat_page chats;
    band_message msg;
    int found = 7;
    UNIT_CHECK(band_delete_agent(c, "../admin", 1, err) == ERR_USAGE && has(err, "agent id"),
               "path traversal in an id: %s", err);
    UNIT_CHECK(band_delete_chat(c, "a/b", err) == ERR_USAGE, "slash in an id");
    UNIT_CHECK(band_add_participant(c, "room", "", NULL, err) == ERR_USAGE, "empty id");
    UNIT_CHECK(band_send_message(c, "room", "hi", &m, 0, id, err) == ERR_USAGE &&
                   has(err, "mention"),
               "no mention: %s", err);
    UNIT_CHECK(band_agent_send_message(c, "room", "hi", NULL, 1, id, err) == ERR_USAGE, "NULL mentions");
    UNIT_CHECK(band_agent_chats(c, 0, 100, &chats, err) == ERR_USAGE, "page 0");
    UNIT_CHECK(band_agent_list_processing(c, "room", 0, &page, err) == ERR_USAGE, "page 0");
    UNIT_CHECK(band_list_agents(c, NULL, -1, NULL, NULL, err) == ERR_USAGE, "no output");
    UNIT_CHECK(band_agent_next_message(c, "room id", &msg, &found, err) == ERR_USAGE && found == 0,
               "space in an id; found cleared");
    UNIT_CHECK(band_agent_mark_failed(c, "room", "m?x=1", "boom", err) == ERR_USAGE, "query in id");
    UNIT_CHECK(band_last_result(c)->attempts == 0, "none of these reached the network");
    band_client_free(c);
}

/* ---- loopback sockets --------------------------------------------------------- */

static int listen_loopback(int *port)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    socklen_t alen = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 8) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0)
        abort();
    *port = ntohs(a.sin_port);
    return fd;
}

/* A port nothing listens on: bound, then released. */
static int closed_port(void)
{
    int port;
    close(listen_loopback(&port));
    return port;
}

static void base_url(char *buf, size_t cap, int port)
{
    snprintf(buf, cap, "http://127.0.0.1:%d", port);
}

/* The scripted responder: answers each connection with the next canned
 * response and records the request it read. */
#define CANNED_MAX 4
typedef struct canned {
    int fd, port;
    char *answers[CANNED_MAX];
    size_t n_answers;
    char requests[CANNED_MAX][4096];
    size_t n_requests;
    pthread_t thread;
} canned;

/* Queues "HTTP/1.1 <status>" with extra header lines and a body. */
static void canned_add(canned *cn, const char *status, const char *headers, const char *body)
{
    size_t n = strlen(status) + strlen(headers) + strlen(body) + 128;
    char *a = malloc(n);
    snprintf(a, n, "HTTP/1.1 %s\r\nContent-Type: application/json\r\nConnection: close\r\n"
                   "%sContent-Length: %zu\r\n\r\n%s", status, headers, strlen(body), body);
    cn->answers[cn->n_answers++] = a;
}

static size_t header_end(const char *req, size_t len)
{
    for (size_t i = 3; i < len; i++)
        if (memcmp(req + i - 3, "\r\n\r\n", 4) == 0)
            return i + 1;
    return 0;
}

static void read_request(int fd, char *req, size_t cap)
{
    size_t len = 0, want = 0;
    struct pollfd p = {fd, POLLIN, 0};
    while (len < cap - 1 && (want == 0 || len < want) && poll(&p, 1, 5000) == 1) {
        ssize_t n = recv(fd, req + len, cap - 1 - len, 0);
        if (n <= 0)
            break;
        len += (size_t)n;
        req[len] = '\0';
        size_t end = header_end(req, len);
        const char *cl = strstr(req, "Content-Length: ");
        if (end && want == 0)
            want = end + (cl ? (size_t)atol(cl + 16) : 0);
    }
    req[len] = '\0';
}

static void send_all(int fd, const char *text, size_t n)
{
    for (size_t off = 0; off < n;) {
        ssize_t w = send(fd, text + off, n - off, 0);
        if (w <= 0)
            return; /* the client hung up, as the body-cap case wants */
        off += (size_t)w;
    }
}

static void *canned_serve(void *arg)
{
    canned *cn = arg;
    for (size_t i = 0; i < cn->n_answers; i++) {
        struct pollfd p = {cn->fd, POLLIN, 0};
        if (poll(&p, 1, 10000) != 1)
            break;
        int fd = accept(cn->fd, NULL, NULL);
        if (fd < 0)
            break;
        read_request(fd, cn->requests[i], sizeof cn->requests[i]);
        cn->n_requests++;
        send_all(fd, cn->answers[i], strlen(cn->answers[i]));
        close(fd);
    }
    return NULL;
}

static void canned_start(canned *cn)
{
    signal(SIGPIPE, SIG_IGN); /* a client that hangs up must not kill the test */
    cn->fd = listen_loopback(&cn->port);
    if (pthread_create(&cn->thread, NULL, canned_serve, cn) != 0)
        abort();
}

static void canned_stop(canned *cn)
{
    shutdown(cn->fd, SHUT_RDWR);
    pthread_join(cn->thread, NULL);
    close(cn->fd);
    for (size_t i = 0; i < cn->n_answers; i++)
        free(cn->answers[i]);
}

static band_client *canned_client(const canned *cn, const char *prefix, const band_options *o)
{
    char base[64], err[ERR_BUFSZ] = "";
    band_client *c = NULL;
    snprintf(base, sizeof base, "http://127.0.0.1:%d%s", cn->port, prefix);
    UNIT_CHECK(band_client_new(base, CANARY, o, &c, err) == ERR_OK, "client: %s", err);
    return c;
}

/* ---- wire ----------------------------------------------------------------------- */

static void test_wire_register_request_and_trace(void)
{
    canned cn = {0};
    canned_add(&cn, "201 Created", "",
               "{\"data\":{\"agent\":{\"id\":\"0b6f1c2e-agent\",\"name\":\"e2e-band-1a2b3c4d-"
               "sandbox\"},\"credentials\":{\"api_key\":\"" MINTED "\"}}}");
    canned_start(&cn);
    FILE *trace = tmpfile();
    band_options o = band_options_default();
    o.debug = trace;
    band_client *c = canned_client(&cn, "/staging/", &o);
    band_new_agent agent;
    char err[ERR_BUFSZ] = "";
    err_code rc = band_register_agent(c, "e2e-band-1a2b3c4d-sandbox",
                                      "E2E baseline test agent (sandbox)", &agent, err);
    canned_stop(&cn);
    UNIT_CHECK(rc == ERR_OK, "register: %d %s", rc, err);
    UNIT_CHECK(strcmp(agent.id, "0b6f1c2e-agent") == 0, "id %s", agent.id);
    UNIT_CHECK(strcmp(agent.api_key, MINTED) == 0, "the caller gets the minted key");
    UNIT_CHECK(redact_has_secret(MINTED, strlen(MINTED)), "the minted key is masked from now on");
    UNIT_CHECK(band_last_status(c) == 201 && band_last_result(c)->attempts == 1, "status kept");

    const char *req = cn.requests[0];
    UNIT_CHECK(starts(req, "POST /staging/api/v1/me/agents/register HTTP/1.1\r\n"),
               "request line keeps the base's prefix: %.60s", req);
    UNIT_CHECK(has(req, "\r\nX-API-Key: " CANARY "\r\n"), "the key goes in X-API-Key");
    UNIT_CHECK(has(req, "\r\nContent-Type: application/json\r\n") &&
                   has(req, "\r\nAccept: application/json\r\n"),
               "JSON both ways");
    UNIT_CHECK(has(req, "\r\nUser-Agent: band-smoke/"), "user agent");
    UNIT_CHECK(has(req, "\r\n\r\n{\"agent\":{\"name\":\"e2e-band-1a2b3c4d-sandbox\","
                        "\"description\":\"E2E baseline test agent (sandbox)\"}}"),
               "body as the protocol says: %s", req);

    char log[16384];
    rewind(trace);
    size_t n = fread(log, 1, sizeof log - 1, trace);
    log[n] = '\0';
    fclose(trace);
    UNIT_CHECK(has(log, "> POST /staging/api/v1/me/agents/register"), "request line traced");
    UNIT_CHECK(has(log, "> X-API-Key: " REDACT_MASK), "key header masked: %s", log);
    UNIT_CHECK(has(log, "< HTTP/1.1 201 Created"), "response traced");
    UNIT_CHECK(!has(log, CANARY) && !has(log, "sk-canary"), "the user key never in the trace");
    UNIT_CHECK(!has(log, MINTED) && !has(log, "credentials"), "bodies are dropped");
    band_client_free(c);
}

static void test_wire_methods_and_paths(void)
{
    canned cn = {0};
    canned_add(&cn, "200 OK", "", "{\"data\":{\"id\":\"ag-1\",\"name\":\"n\"}}");
    canned_add(&cn, "204 No Content", "", "");
    canned_add(&cn, "201 Created", "",
               "{\"data\":{\"id\":\"msg-9\",\"recipients\":[],\"success\":true}}");
    canned_add(&cn, "204 No Content", "", "");
    canned_start(&cn);
    band_client *c = canned_client(&cn, "", NULL);
    char err[ERR_BUFSZ] = "", id[BAND_ID_SZ];
    err_code r1 = band_delete_agent(c, "ag-1", 1, err);
    err_code r2 = band_delete_chat(c, "room-1", err);
    band_mention m = {"user-1", NULL, "alice"};
    err_code r3 = band_agent_send_message(c, "room-1", "sandbox-ack:abc", &m, 1, id, err);
    band_message msg;
    int found = -1;
    err_code r4 = band_agent_next_message(c, "room-1", &msg, &found, err);
    canned_stop(&cn);
    UNIT_CHECK(r1 == ERR_OK && r2 == ERR_OK && r3 == ERR_OK && r4 == ERR_OK,
               "%d %d %d %d: %s", r1, r2, r3, r4, err);
    UNIT_CHECK(starts(cn.requests[0], "DELETE /api/v1/me/agents/ag-1?force=true HTTP"),
               "force delete: %.50s", cn.requests[0]);
    UNIT_CHECK(starts(cn.requests[1], "DELETE /api/v1/me/chats/room-1 HTTP"),
               "room delete, a bare 204 is success");
    UNIT_CHECK(starts(cn.requests[2], "POST /api/v1/agent/chats/room-1/messages HTTP"),
               "agent reply path");
    UNIT_CHECK(has(cn.requests[2], "{\"message\":{\"content\":\"sandbox-ack:abc\",\"mentions\":"
                                   "[{\"id\":\"user-1\",\"handle\":\"alice\"}]}}"),
               "mention as {id, handle}: %s", cn.requests[2]);
    UNIT_CHECK(strcmp(id, "msg-9") == 0, "reply id %s", id);
    UNIT_CHECK(found == 0 && band_last_status(c) == 204, "204 from /next is nothing pending");
    band_client_free(c);
}

static void test_wire_503_retry_after_and_body_cap(void)
{
    canned cn = {0};
    canned_add(&cn, "503 Service Unavailable", "Retry-After: 1\r\n", "");
    canned_add(&cn, "200 OK", "",
               "{\"data\":{\"id\":\"ag\",\"name\":\"n\",\"handle\":\"o/n\",\"description\":\"d\","
               "\"owner_uuid\":\"ow\"}}");
    char *huge = malloc((size_t)BAND_HTTP_MAX_BODY + 1001);
    memset(huge, ' ', (size_t)BAND_HTTP_MAX_BODY + 1000);
    huge[BAND_HTTP_MAX_BODY + 1000] = '\0';
    canned_add(&cn, "200 OK", "", huge);
    free(huge);
    canned_start(&cn);
    band_options o = band_options_default();
    o.max_retries = 1;
    band_client *c = canned_client(&cn, "", &o);
    band_agent_info info;
    char err[ERR_BUFSZ] = "";
    err_code rc = band_agent_me(c, &info, err);
    const band_result *r = band_last_result(c);
    UNIT_CHECK(rc == ERR_OK && strcmp(info.handle, "o/n") == 0, "me after a 503: %d %s", rc, err);
    UNIT_CHECK(r->attempts == 2 && r->waited_ms == 1000, "Retry-After 1 s waited exactly: %d, %lld ms",
               r->attempts, (long long)r->waited_ms);
    UNIT_CHECK(r->elapsed_ms >= 1000, "really slept: %lld ms", (long long)r->elapsed_ms);
    rc = band_agent_me(c, &info, err);
    canned_stop(&cn);
    UNIT_CHECK(rc == ERR_PROTOCOL && has(err, "response body over"), "body cap: %d %s", rc, err);
    band_client_free(c);
}

static void test_wire_protocol_errors_keep_ids(void)
{
    canned cn = {0};
    canned_add(&cn, "201 Created", "",
               "{\"data\":{\"agent\":{\"id\":\"ag-short\",\"name\":\"n\"},"
               "\"credentials\":{\"api_key\":\"abc\"}}}");
    canned_add(&cn, "201 Created", "", "{\"data\":{\"agent\":{\"id\":\"ag-nokey\",\"name\":\"n\"}}}");
    canned_add(&cn, "200 OK", "", "{\"data\":{\"id\":\"ag\",\"name\":\"n\"}}");
    canned_add(&cn, "200 OK", "", "{\"data\":[{\"id\":\"m1\",\"content\":7}]}");
    canned_start(&cn);
    band_client *c = canned_client(&cn, "", NULL);
    char err[ERR_BUFSZ] = "";
    band_new_agent agent;
    err_code rc = band_register_agent(c, "n", "d", &agent, err);
    UNIT_CHECK(rc == ERR_PROTOCOL && strcmp(agent.id, "ag-short") == 0 && agent.api_key[0] == '\0',
               "a key redact cannot mask is refused, the id kept for reaping: %d %s", rc, err);
    rc = band_register_agent(c, "n", "d", &agent, err);
    UNIT_CHECK(rc == ERR_PROTOCOL && strcmp(agent.id, "ag-nokey") == 0 && has(err, "credentials"),
               "no credentials: %d %s", rc, err);
    band_agent_info info;
    rc = band_agent_me(c, &info, err);
    UNIT_CHECK(rc == ERR_PROTOCOL &&
                   strcmp(err, "GET /api/v1/agent/me: HTTP 200: \"handle\" is missing") == 0,
               "missing field: %s", err);
    band_message_page page;
    rc = band_agent_context(c, "room", &page, err);
    UNIT_CHECK(rc == ERR_PROTOCOL && has(err, "item 0: ") && page.items == NULL && page.count == 0,
               "bad item, nothing handed out: %s", err);
    band_message_page_free(&page);
    canned_stop(&cn);
    band_client_free(c);
}

/* ---- no server at all ------------------------------------------------------------ */

/* The SDK's backoff, compressed: the defaults' own numbers are checked in
 * client_refusals, the doubling and the jitter here, a tenth as long. */
#define FAST_RETRY_BASE_MS 50

static void test_refused_is_network_and_retried(void)
{
    band_options o = band_options_default();
    o.max_retries = 2;
    o.retry_base_ms = FAST_RETRY_BASE_MS;
    band_client *c = NULL;
    char base[64], err[ERR_BUFSZ] = "";
    base_url(base, sizeof base, closed_port());
    UNIT_CHECK(band_client_new(base, CANARY, &o, &c, err) == ERR_OK, "client: %s", err);
    band_agent_info info;
    err_code rc = band_agent_me(c, &info, err);
    const band_result *r = band_last_result(c);
    UNIT_CHECK(rc == ERR_NETWORK, "refused is a network error: %d %s", rc, err);
    UNIT_CHECK(has(err, "GET /api/v1/agent/me: ") && has(err, "(3 attempts)"), "message: %s", err);
    UNIT_CHECK(r->attempts == 3 && r->status == 0, "1 + 2 retries, no status: %d", r->attempts);
    /* two waits: one in [base/2, base], one in [base, 2 base] */
    UNIT_CHECK(r->waited_ms >= 3 * FAST_RETRY_BASE_MS / 2 && r->waited_ms <= 3 * FAST_RETRY_BASE_MS,
               "backoff with jitter: %lld ms", (long long)r->waited_ms);

    /* A create that provably never left may be sent again. */
    band_new_agent agent;
    rc = band_register_agent(c, "n", "d", &agent, err);
    UNIT_CHECK(rc == ERR_NETWORK && band_last_result(c)->attempts == 3,
               "refused register retried: %d attempts", band_last_result(c)->attempts);
    UNIT_CHECK(agent.id[0] == '\0' && !has(err, CANARY), "nothing created, nothing leaked");
    band_client_free(c);
}

static void test_silent_server_times_out(void)
{
    int port;
    int fd = listen_loopback(&port); /* never accepts: the kernel completes the handshake */
    band_options o = band_options_default();
    o.timeout_ms = 400;
    o.max_retries = 3;
    band_client *c = NULL;
    char base[64], err[ERR_BUFSZ] = "";
    base_url(base, sizeof base, port);
    UNIT_CHECK(band_client_new(base, CANARY, &o, &c, err) == ERR_OK, "client: %s", err);
    band_profile p;
    int64_t t0 = clock_mono_ms();
    err_code rc = band_get_profile(c, &p, err);
    int64_t took = clock_mono_ms() - t0;
    close(fd);
    UNIT_CHECK(rc == ERR_TIMEOUT, "timeout: %d %s", rc, err);
    UNIT_CHECK(band_last_result(c)->attempts == 1, "the deadline leaves no room for retries: %d",
               band_last_result(c)->attempts);
    UNIT_CHECK(took >= 380 && took < 3000, "bounded by the deadline: %lld ms", (long long)took);
    band_client_free(c);
}

/* ---- flow: against the fake Band server ------------------------------------- */

#define TITLE "Sandbox smoke \xe2\x80\x94 1a2b3c4d"
#define AGENT_NAME "e2e-band-1a2b3c4d-sandbox"
#define AGENT_DESCRIPTION "E2E baseline test agent (sandbox)"
#define TOKEN "0123456789ab"

static band_client *fake_client(const tk_band *b, const char *key, const band_options *o)
{
    band_client *c = NULL;
    char err[ERR_BUFSZ] = "";
    UNIT_CHECK(band_client_new(b->rest_url, key, o, &c, err) == ERR_OK, "client: %s", err);
    return c;
}

static int fake_start(tk_band *b, const char *user_key)
{
    return UNIT_CHECK(tk_band_start(b, user_key) == 0, "the fake Band server did not start");
}

static band_options retrying(int max_retries, long timeout_ms)
{
    band_options o = band_options_default();
    o.max_retries = max_retries;
    o.timeout_ms = timeout_ms;
    o.retry_base_ms = FAST_RETRY_BASE_MS;
    return o;
}

static char *read_all(FILE *fp)
{
    long n;
    if (fflush(fp) != 0 || fseek(fp, 0, SEEK_END) != 0 || (n = ftell(fp)) < 0)
        return NULL;
    char *text = calloc((size_t)n + 1, 1);
    rewind(fp);
    if (text && fread(text, 1, (size_t)n, fp) != (size_t)n)
        text[0] = '\0';
    return text;
}

/* The smoke's provisioning: who am I, register, room, membership. */
typedef struct flow {
    tk_band fake;
    band_client *user, *agent;
    band_profile me;
    band_new_agent bot;
    char room[BAND_ID_SZ];
} flow;

static int provision(flow *f, const band_options *o)
{
    char err[ERR_BUFSZ] = "";
    f->user = fake_client(&f->fake, f->fake.user_key, o);
    if (!f->user)
        return 0;
    err_code rc = band_get_profile(f->user, &f->me, err);
    if (!UNIT_CHECK(rc == ERR_OK && f->me.id[0] && f->me.handle[0], "profile: %s", err))
        return 0;
    rc = band_register_agent(f->user, AGENT_NAME, AGENT_DESCRIPTION, &f->bot, err);
    if (!UNIT_CHECK(rc == ERR_OK && f->bot.id[0] && f->bot.api_key[0], "register: %s", err))
        return 0;
    UNIT_CHECK(strcmp(f->bot.name, AGENT_NAME) == 0, "name echoed: %s", f->bot.name);
    rc = band_create_chat(f->user, TITLE, f->room, err);
    if (!UNIT_CHECK(rc == ERR_OK && f->room[0], "create chat: %s", err))
        return 0;
    rc = band_add_participant(f->user, f->room, f->bot.id, NULL, err);
    if (!UNIT_CHECK(rc == ERR_OK, "add participant: %s", err))
        return 0;
    f->agent = fake_client(&f->fake, f->bot.api_key, o);
    return f->agent != NULL;
}

static void flow_end(flow *f)
{
    band_client_free(f->user);
    band_client_free(f->agent);
    OPENSSL_cleanse(f->bot.api_key, sizeof f->bot.api_key);
    tk_band_stop(&f->fake);
}

/* What the SDK does on start: identity, rooms, who is there. */
static void check_agent_view(flow *f)
{
    char err[ERR_BUFSZ] = "";
    band_agent_info info;
    err_code rc = band_agent_me(f->agent, &info, err);
    UNIT_CHECK(rc == ERR_OK && strcmp(info.id, f->bot.id) == 0, "agent/me: %s", err);
    UNIT_CHECK(strcmp(info.description, AGENT_DESCRIPTION) == 0 && info.handle[0] &&
                   info.owner_uuid[0],
               "description %s, handle %s", info.description, info.handle);

    band_chat_page chats;
    rc = band_agent_chats(f->agent, 1, 100, &chats, err);
    UNIT_CHECK(rc == ERR_OK && chats.count == 1, "agent/chats: %d %zu %s", rc, chats.count, err);
    UNIT_CHECK(chats.count == 1 && strcmp(chats.items[0].id, f->room) == 0 &&
                   strcmp(chats.items[0].title, TITLE) == 0,
               "the room, with its title");
    UNIT_CHECK(chats.info.page == 1 && chats.info.total_pages == 1, "page %d of %d",
               chats.info.page, chats.info.total_pages);
    band_chat_page_free(&chats);

    band_participant_list who;
    rc = band_agent_participants(f->agent, f->room, &who, err);
    UNIT_CHECK(rc == ERR_OK && who.count == 2, "participants: %zu %s", who.count, err);
    int user_seen = 0, agent_seen = 0;
    for (size_t i = 0; i < who.count; i++) {
        user_seen |= strcmp(who.items[i].type, "User") == 0 &&
                     strcmp(who.items[i].id, f->me.id) == 0 &&
                     strcmp(who.items[i].handle, f->me.handle) == 0;
        agent_seen |= strcmp(who.items[i].type, "Agent") == 0 &&
                      strcmp(who.items[i].id, f->bot.id) == 0;
    }
    UNIT_CHECK(user_seen && agent_seen, "the user (with handle) and the agent are both there");
    band_participant_list_free(&who);
}

/* One probe turn: the user mentions the agent, the agent takes the
 * message through processing and replies with a mention. */
static void probe_turn(flow *f)
{
    char err[ERR_BUFSZ] = "", sent_id[BAND_ID_SZ], reply_id[BAND_ID_SZ], event_id[BAND_ID_SZ];
    band_message msg;
    int found = -1;
    err_code rc = band_agent_next_message(f->agent, f->room, &msg, &found, err);
    UNIT_CHECK(rc == ERR_OK && found == 0 && band_last_status(f->agent) == 204,
               "nothing pending yet: %d %d %s", rc, found, err);

    band_mention to_bot = {f->bot.id, f->bot.name, NULL};
    rc = band_send_message(f->user, f->room, "@" AGENT_NAME " marker:" TOKEN, &to_bot, 1,
                           sent_id, err);
    UNIT_CHECK(rc == ERR_OK && sent_id[0], "user message: %s", err);

    int64_t now = clock_wall_ms(NULL);
    rc = band_agent_next_message(f->agent, f->room, &msg, &found, err);
    UNIT_CHECK(rc == ERR_OK && found == 1 && strcmp(msg.id, sent_id) == 0, "next: %s", err);
    UNIT_CHECK(has(msg.content, "marker:" TOKEN) && strcmp(msg.sender_type, "User") == 0 &&
                   strcmp(msg.sender_id, f->me.id) == 0,
               "content %s from %s %s", msg.content ? msg.content : "(null)", msg.sender_type,
               msg.sender_id);
    UNIT_CHECK(msg.inserted_at_ms > now - 60000 && msg.inserted_at_ms < now + 60000,
               "inserted_at read as epoch ms: %lld", (long long)msg.inserted_at_ms);
    band_message_clear(&msg);

    UNIT_CHECK(band_agent_mark_processing(f->agent, f->room, sent_id, err) == ERR_OK, "%s", err);
    band_message_page stale;
    rc = band_agent_list_processing(f->agent, f->room, 1, &stale, err);
    UNIT_CHECK(rc == ERR_OK && stale.count == 1 && strcmp(stale.items[0].id, sent_id) == 0,
               "processing list: %zu %s", stale.count, err);
    UNIT_CHECK(stale.info.total_pages >= 1, "numbered paging: %d", stale.info.total_pages);
    band_message_page_free(&stale);

    UNIT_CHECK(band_agent_activity(f->agent, f->room, 1, err) == ERR_OK, "activity: %s", err);
    rc = band_agent_event(f->agent, f->room,
                          "{\"name\":\"band_get_participants\",\"args\":{},\"tool_call_id\":\"r1\"}",
                          "tool_call", event_id, err);
    UNIT_CHECK(rc == ERR_OK && event_id[0], "event: %s", err);
    band_mention to_user = {f->me.id, NULL, f->me.handle};
    rc = band_agent_send_message(f->agent, f->room, "sandbox-ack:" TOKEN, &to_user, 1, reply_id,
                                 err);
    UNIT_CHECK(rc == ERR_OK && reply_id[0], "reply: %s", err);
    UNIT_CHECK(band_agent_mark_processed(f->agent, f->room, sent_id, err) == ERR_OK, "%s", err);
    UNIT_CHECK(band_agent_activity(f->agent, f->room, 0, err) == ERR_OK, "activity off: %s", err);

    rc = band_agent_next_message(f->agent, f->room, &msg, &found, err);
    UNIT_CHECK(rc == ERR_OK && found == 0, "nothing pending after processed: %s", err);

    band_message_page seen;
    rc = band_list_messages(f->user, f->room, 100, &seen, err);
    UNIT_CHECK(rc == ERR_OK && seen.count >= 2, "user sees the room: %zu %s", seen.count, err);
    UNIT_CHECK(seen.count >= 1 && strcmp(seen.items[0].id, reply_id) == 0 &&
                   has(seen.items[0].content, "sandbox-ack:" TOKEN) &&
                   strcmp(seen.items[0].sender_type, "Agent") == 0,
               "newest first: the agent's reply");
    band_message_page_free(&seen);

    band_message_page history;
    rc = band_agent_context(f->agent, f->room, &history, err);
    UNIT_CHECK(rc == ERR_OK && history.count >= 1, "context: %zu %s", history.count, err);
    band_message_page_free(&history);
}

/* A failed turn, then the reaping. */
static void fail_and_reap(flow *f)
{
    char err[ERR_BUFSZ] = "", id[BAND_ID_SZ];
    band_mention to_bot = {f->bot.id, f->bot.name, NULL};
    UNIT_CHECK(band_send_message(f->user, f->room, "@x again", &to_bot, 1, id, err) == ERR_OK,
               "%s", err);
    UNIT_CHECK(band_agent_mark_processing(f->agent, f->room, id, err) == ERR_OK, "%s", err);
    UNIT_CHECK(band_agent_mark_failed(f->agent, f->room, id, "boom", err) == ERR_OK,
               "failed mark: %s", err);

    band_participant_list who;
    UNIT_CHECK(band_list_participants(f->user, f->room, &who, err) == ERR_OK && who.count == 2,
               "user-side participants: %s", err);
    band_participant_list_free(&who);

    int agents = -1, rooms = -1;
    tk_band_stats(&f->fake, &agents, &rooms);
    UNIT_CHECK(agents == 1 && rooms == 1, "live before reaping: %d agents, %d rooms", agents, rooms);
    UNIT_CHECK(band_delete_chat(f->user, f->room, err) == ERR_OK, "delete chat: %s", err);
    UNIT_CHECK(band_delete_agent(f->user, f->bot.id, 1, err) == ERR_OK, "delete agent: %s", err);
    tk_band_stats(&f->fake, &agents, &rooms);
    UNIT_CHECK(agents == 0 && rooms == 0, "reaped: %d agents, %d rooms", agents, rooms);
}

static void test_flow_provision_probe_reap(void)
{
    flow f;
    memset(&f, 0, sizeof f);
    FILE *trace = tmpfile();
    band_options o = band_options_default();
    o.debug = trace;
    if (fake_start(&f.fake, CANARY) && provision(&f, &o)) {
        check_agent_view(&f);
        probe_turn(&f);
        fail_and_reap(&f);
    }
    char minted[BAND_KEY_SZ];
    memcpy(minted, f.bot.api_key, sizeof minted);
    flow_end(&f);
    char *log = read_all(trace);
    fclose(trace);
    UNIT_CHECK(log && has(log, "> X-API-Key: " REDACT_MASK), "the trace was written");
    UNIT_CHECK(log && !has(log, CANARY) && !has(log, "sk-canary"), "no user key in the trace");
    UNIT_CHECK(log && minted[0] && !has(log, minted), "no agent key in the trace");
    OPENSSL_cleanse(minted, sizeof minted);
    free(log);
}

static void test_flow_http_errors(void)
{
    tk_band b;
    if (!fake_start(&b, NULL))
        return;
    char err[ERR_BUFSZ] = "";
    band_client *bad = fake_client(&b, "wrong-key-0123456789", NULL);
    band_profile p;
    err_code rc = band_get_profile(bad, &p, err);
    const band_result *r = band_last_result(bad);
    UNIT_CHECK(rc == ERR_HTTP && r->status == 401 && strcmp(r->code, "unauthorized") == 0,
               "401: %d %ld %s", rc, r->status, err);
    UNIT_CHECK(starts(err, "GET /api/v1/me/profile: HTTP 401 unauthorized: ") &&
                   !has(err, "wrong-key"),
               "message: %s", err);
    band_client_free(bad);

    band_client *user = fake_client(&b, b.user_key, NULL);
    band_agent_info info;
    rc = band_agent_me(user, &info, err);
    UNIT_CHECK(rc == ERR_HTTP && band_last_status(user) == 403, "user key on an agent path: %s", err);
    rc = band_delete_agent(user, "00000000-0000-0000-0000-000000000000", 1, err);
    UNIT_CHECK(rc == ERR_HTTP && band_last_status(user) == 404, "unknown agent: %s", err);

    band_new_agent bot;
    char room[BAND_ID_SZ], id[BAND_ID_SZ];
    UNIT_CHECK(band_register_agent(user, AGENT_NAME, AGENT_DESCRIPTION, &bot, err) == ERR_OK &&
                   band_create_chat(user, TITLE, room, err) == ERR_OK &&
                   band_add_participant(user, room, bot.id, "member", err) == ERR_OK,
               "setup: %s", err);
    band_new_agent twin;
    rc = band_register_agent(user, AGENT_NAME, AGENT_DESCRIPTION, &twin, err);
    UNIT_CHECK(rc == ERR_HTTP && band_last_status(user) == 422 && twin.id[0] == '\0',
               "a taken name is a 422 and no id: %s", err);
    band_client *agent = fake_client(&b, bot.api_key, NULL);

    char path[128];
    snprintf(path, sizeof path, "/api/v1/agent/chats/%s/messages", room);
    band_envelope env;
    rc = band_call(agent, "POST", path, "{\"message\":{\"content\":\"x\",\"mentions\":[]}}", &env,
                   err);
    r = band_last_result(agent);
    UNIT_CHECK(rc == ERR_HTTP && r->status == 422 && strcmp(r->code, "mentions_required") == 0,
               "server-side 422: %d %s", rc, err);
    UNIT_CHECK(has(err, ": HTTP 422 mentions_required: ") && has(err, "(request_id "),
               "message: %s", err);
    UNIT_CHECK(env.root && !env.data, "the error body stays readable");
    band_envelope_free(&env);

    band_mention stranger = {"00000000-0000-0000-0000-00000000abcd", NULL, "nobody"};
    rc = band_agent_send_message(agent, room, "hi", &stranger, 1, id, err);
    UNIT_CHECK(rc == ERR_HTTP && band_last_status(agent) == 422 && id[0] == '\0',
               "mention outside the room: %s", err);

    band_mention to_bot = {bot.id, bot.name, NULL};
    UNIT_CHECK(band_send_message(user, room, "@x hi", &to_bot, 1, id, err) == ERR_OK, "%s", err);
    rc = band_agent_mark_processed(agent, room, id, err);
    UNIT_CHECK(rc == ERR_HTTP && band_last_status(agent) == 422, "processed without an attempt: %s",
               err);
    UNIT_CHECK(band_delete_chat(user, room, err) == ERR_OK &&
                   band_delete_agent(user, bot.id, 1, err) == ERR_OK,
               "cleanup: %s", err);
    band_client_free(agent);
    band_client_free(user);
    tk_band_stop(&b);
}

static void test_flow_paging_with_cursor(void)
{
    tk_band b;
    if (!fake_start(&b, NULL))
        return;
    for (int i = 0; i < 5; i++) {
        char seed[128];
        snprintf(seed, sizeof seed,
                 "{\"action\":\"seed_agent\",\"name\":\"e2e-band-old0%d-sandbox\",\"age_minutes\":500}",
                 i);
        UNIT_CHECK(tk_band_control(&b, seed) == 200, "seed %d", i);
    }
    band_client *user = fake_client(&b, b.user_key, NULL);
    char cursor[BAND_CURSOR_SZ] = "", seen[5][BAND_ID_SZ], err[ERR_BUFSZ] = "";
    size_t total = 0, pages = 0, more_flags = 0;
    int64_t now = clock_wall_ms(NULL), age = 500 * 60000LL;
    int more = 1;
    while (more && pages < 10) {
        band_agent_page page;
        err_code rc = band_list_agents(user, "E2E-band-old", 2, cursor, &page, err);
        if (!UNIT_CHECK(rc == ERR_OK, "page %zu: %s", pages, err))
            break;
        pages++;
        for (size_t i = 0; i < page.count && total < 5; i++, total++) {
            memcpy(seen[total], page.items[i].id, BAND_ID_SZ);
            for (size_t j = 0; j < total; j++)
                UNIT_CHECK(strcmp(seen[j], seen[total]) != 0, "agent listed twice");
            int64_t at = page.items[i].inserted_at_ms;
            UNIT_CHECK(at > now - age - 300000 && at < now - age + 300000,
                       "backdated inserted_at: %lld", (long long)at);
        }
        more = page.info.has_more;
        more_flags += (size_t)more;
        UNIT_CHECK(more == (page.info.next_cursor[0] != '\0'), "cursor iff more");
        memcpy(cursor, page.info.next_cursor, sizeof cursor);
        band_agent_page_free(&page);
    }
    UNIT_CHECK(total == 5 && pages == 3 && more_flags == 2,
               "5 agents in pages of 2: %zu agents, %zu pages", total, pages);
    band_client_free(user);
    tk_band_stop(&b);
}

static void test_flow_retries_500_then_success(void)
{
    tk_band b;
    if (!fake_start(&b, NULL))
        return;
    band_options o = retrying(3, 30000);
    band_client *patient = fake_client(&b, b.user_key, &o);
    band_client *plain = fake_client(&b, b.user_key, NULL);
    char err[ERR_BUFSZ] = "";
    band_agent_page page;
    UNIT_CHECK(tk_band_control(&b, "{\"action\":\"fail_rest\",\"count\":2,\"status\":500}") == 200,
               "plan");
    err_code rc = band_list_agents(patient, NULL, 0, NULL, &page, err);
    const band_result *r = band_last_result(patient);
    UNIT_CHECK(rc == ERR_OK && r->attempts == 3 && r->status == 200,
               "two 500s then a page: %d, %d attempts, %s", rc, r->attempts, err);
    UNIT_CHECK(r->waited_ms >= 3 * FAST_RETRY_BASE_MS / 2 && r->waited_ms <= 3 * FAST_RETRY_BASE_MS,
               "backoff base/2..base + base..2 base: %lld", (long long)r->waited_ms);
    band_agent_page_free(&page);

    UNIT_CHECK(tk_band_control(&b, "{\"action\":\"fail_rest\",\"count\":1,\"status\":500}") == 200,
               "plan");
    rc = band_list_agents(plain, NULL, 0, NULL, &page, err);
    UNIT_CHECK(rc == ERR_HTTP && band_last_result(plain)->attempts == 1 &&
                   band_last_status(plain) == 500,
               "no retries by default, like the toolkit: %s", err);
    band_agent_page_free(&page);
    band_client_free(patient);
    band_client_free(plain);
    tk_band_stop(&b);
}

static void test_flow_429_retry_after(void)
{
    tk_band b;
    if (!fake_start(&b, NULL))
        return;
    band_options o = retrying(2, 30000);
    band_client *c = fake_client(&b, b.user_key, &o);
    char err[ERR_BUFSZ] = "";
    band_profile p;
    UNIT_CHECK(tk_band_control(&b, "{\"action\":\"fail_rest\",\"count\":1,\"status\":429,"
                                   "\"retry_after\":1}") == 200, "plan");
    err_code rc = band_get_profile(c, &p, err);
    const band_result *r = band_last_result(c);
    UNIT_CHECK(rc == ERR_OK && r->attempts == 2, "429 then ok: %d %s", rc, err);
    UNIT_CHECK(r->waited_ms == 1000 && r->elapsed_ms >= 1000 && r->elapsed_ms < 5000,
               "Retry-After honoured: waited %lld, took %lld", (long long)r->waited_ms,
               (long long)r->elapsed_ms);

    o = retrying(2, 1500);
    band_client *hurried = fake_client(&b, b.user_key, &o);
    UNIT_CHECK(tk_band_control(&b, "{\"action\":\"fail_rest\",\"count\":1,\"status\":429,"
                                   "\"retry_after\":5}") == 200, "plan");
    rc = band_get_profile(hurried, &p, err);
    r = band_last_result(hurried);
    UNIT_CHECK(rc == ERR_HTTP && r->status == 429 && r->attempts == 1 && r->elapsed_ms < 1000,
               "a Retry-After past the deadline fails at once: %d %lld ms %s", rc,
               (long long)r->elapsed_ms, err);
    UNIT_CHECK(has(err, "no retry: waiting 5000 ms"), "says why: %s", err);
    band_client_free(c);
    band_client_free(hurried);
    tk_band_stop(&b);
}

static void test_flow_no_retry_for_create(void)
{
    tk_band b;
    if (!fake_start(&b, NULL))
        return;
    band_options o = retrying(3, 30000);
    band_client *c = fake_client(&b, b.user_key, &o);
    char err[ERR_BUFSZ] = "";
    band_new_agent bot;
    int agents = -1;
    UNIT_CHECK(tk_band_control(&b, "{\"action\":\"fail_rest\",\"count\":1,\"status\":500}") == 200,
               "plan");
    err_code rc = band_register_agent(c, AGENT_NAME, AGENT_DESCRIPTION, &bot, err);
    UNIT_CHECK(rc == ERR_HTTP && band_last_result(c)->attempts == 1 && bot.id[0] == '\0',
               "a create is sent once: %d, %d attempts", rc, band_last_result(c)->attempts);
    tk_band_stats(&b, &agents, NULL);
    UNIT_CHECK(agents == 0, "nothing created: %d", agents);

    o.retry_creates = 1;
    band_client *bold = fake_client(&b, b.user_key, &o);
    UNIT_CHECK(tk_band_control(&b, "{\"action\":\"fail_rest\",\"count\":1,\"status\":500}") == 200,
               "plan");
    rc = band_register_agent(bold, AGENT_NAME, AGENT_DESCRIPTION, &bot, err);
    UNIT_CHECK(rc == ERR_OK && band_last_result(bold)->attempts == 2,
               "retry_creates opts in: %d %s", rc, err);
    tk_band_stats(&b, &agents, NULL);
    UNIT_CHECK(agents == 1, "one agent: %d", agents);
    band_client_free(c);
    band_client_free(bold);
    tk_band_stop(&b);
}

static void test_flow_timeout_with_delay(void)
{
    tk_band b;
    if (!fake_start(&b, NULL))
        return;
    band_options o = retrying(3, 400);
    band_client *c = fake_client(&b, b.user_key, &o);
    char err[ERR_BUFSZ] = "";
    band_profile p;
    UNIT_CHECK(tk_band_control(&b, "{\"action\":\"delay\",\"ms\":1500}") == 200, "plan");
    int64_t t0 = clock_mono_ms();
    err_code rc = band_get_profile(c, &p, err);
    int64_t took = clock_mono_ms() - t0;
    UNIT_CHECK(rc == ERR_TIMEOUT && took >= 380 && took < 1400, "timeout: %d in %lld ms: %s", rc,
               (long long)took, err);
    UNIT_CHECK(starts(err, "GET /api/v1/me/profile: "), "message: %s", err);
    UNIT_CHECK(tk_band_control(&b, "{\"action\":\"delay\",\"ms\":0}") == 200, "plan");
    rc = band_get_profile(c, &p, err);
    UNIT_CHECK(rc == ERR_OK && p.id[0], "the same client works afterwards: %s", err);
    band_client_free(c);
    tk_band_stop(&b);
}

static void test_flow_refused_then_recovers(void)
{
    tk_band b;
    if (!fake_start(&b, NULL))
        return;
    band_options o = retrying(6, 20000);
    band_client *patient = fake_client(&b, b.user_key, &o);
    band_client *plain = fake_client(&b, b.user_key, NULL);
    char err[ERR_BUFSZ] = "";
    band_profile p;
    /* 1 s of refusals; six retries wait at least 25+50+...+800 = 1575 ms */
    UNIT_CHECK(tk_band_control(&b, "{\"action\":\"refuse\",\"seconds\":1}") == 200, "plan");
    err_code rc = band_get_profile(plain, &p, err);
    UNIT_CHECK(rc == ERR_NETWORK, "refused connections are a network error: %d %s", rc, err);
    rc = band_get_profile(patient, &p, err);
    const band_result *r = band_last_result(patient);
    UNIT_CHECK(rc == ERR_OK && r->attempts >= 2, "a read rides out the outage: %d, %d attempts, %s",
               rc, r->attempts, err);
    band_client_free(patient);
    band_client_free(plain);
    tk_band_stop(&b);
}

const unit_case unit_cases[] = {
    {"envelope_data", test_envelope_data},
    {"envelope_data_and_metadata", test_envelope_data_and_metadata},
    {"envelope_error", test_envelope_error},
    {"envelope_422_details", test_envelope_422_details},
    {"envelope_not_json", test_envelope_not_json},
    {"envelope_wrong_shapes", test_envelope_wrong_shapes},
    {"envelope_empty_and_204", test_envelope_empty_and_204},
    {"envelope_status_range", test_envelope_status_range},
    {"envelope_redacts_what_it_quotes", test_envelope_redacts_what_it_quotes},
    {"envelope_survives_garbage", test_envelope_survives_garbage},
    {"envelope_samples", test_envelope_samples},
    {"message_from_json", test_message_from_json},
    {"join_url", test_join_url},
    {"add_query", test_add_query},
    {"client_refusals", test_client_refusals},
    {"bad_arguments_never_send", test_bad_arguments_never_send},
    {"wire_register_request_and_trace", test_wire_register_request_and_trace},
    {"wire_methods_and_paths", test_wire_methods_and_paths},
    {"wire_503_retry_after_and_body_cap", test_wire_503_retry_after_and_body_cap},
    {"wire_protocol_errors_keep_ids", test_wire_protocol_errors_keep_ids},
    {"refused_is_network_and_retried", test_refused_is_network_and_retried},
    {"silent_server_times_out", test_silent_server_times_out},
    {"flow_provision_probe_reap", test_flow_provision_probe_reap},
    {"flow_http_errors", test_flow_http_errors},
    {"flow_paging_with_cursor", test_flow_paging_with_cursor},
    {"flow_retries_500_then_success", test_flow_retries_500_then_success},
    {"flow_429_retry_after", test_flow_429_retry_after},
    {"flow_no_retry_for_create", test_flow_no_retry_for_create},
    {"flow_timeout_with_delay", test_flow_timeout_with_delay},
    {"flow_refused_then_recovers", test_flow_refused_then_recovers},
    {NULL, NULL},
};
