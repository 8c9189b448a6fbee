/* fake_band: the fake Band server keeps the protocol the suite relies on
 * (REST envelopes, Phoenix v2 joins and pushes, delivery state) and each
 * fault control does what it says. Every test starts its own fake. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "tk.h"
#include "tk_band.h"
#include "tk_band_ws.h"
#include "unit.h"

#define WAIT_MS 3000 /* the bound on any single expected frame */
#define QUIET_MS 300 /* how long "nothing arrives" is watched */

/* ---- small helpers --------------------------------------------------------- */

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A member by dotted path; digits index arrays ("data.0.id"). */
static const cJSON *jget(const cJSON *node, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *seg = strtok(buf, "."); seg && node; seg = strtok(NULL, ".")) {
        if (cJSON_IsArray(node) && seg[0] >= '0' && seg[0] <= '9')
            node = cJSON_GetArrayItem(node, atoi(seg));
        else
            node = cJSON_GetObjectItemCaseSensitive(node, seg);
    }
    return node;
}

static const char *jstr(const cJSON *node, const char *path)
{
    const cJSON *v = jget(node, path);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static double jnum(const cJSON *node, const char *path)
{
    const cJSON *v = jget(node, path);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* One REST call; checks the status and returns the parsed body (NULL when
 * there is none). */
static cJSON *call(tk_band *b, const char *method, const char *path, const char *key,
                   const char *json, long want)
{
    long status = 0;
    char *body = tk_band_request(b, method, path, key, json, &status);
    UNIT_CHECK(status == want, "%s %s: status %ld, wanted %ld: %s", method, path, status, want,
               body ? body : "(no answer)");
    cJSON *doc = body && *body ? cJSON_Parse(body) : NULL;
    free(body);
    return doc;
}

/* Checks an error envelope: code, message and request_id (and details on 422). */
static void expect_error(tk_band *b, const char *method, const char *path, const char *key,
                         const char *json, long status, const char *code)
{
    cJSON *doc = call(b, method, path, key, json, status);
    UNIT_CHECK(strcmp(jstr(doc, "error.code"), code) == 0, "%s %s: code %s, wanted %s", method,
               path, jstr(doc, "error.code"), code);
    UNIT_CHECK(*jstr(doc, "error.request_id") && *jstr(doc, "error.message"),
               "%s %s: envelope lacks message or request_id", method, path);
    if (status == 422)
        UNIT_CHECK(cJSON_IsObject(jget(doc, "error.details")), "%s %s: 422 without details", method,
                   path);
    cJSON_Delete(doc);
}

static long stat_eventually(tk_band *b, const char *name, long want, long timeout_ms)
{
    long deadline = now_ms() + timeout_ms, v;
    while ((v = tk_band_stat(b, name)) != want && now_ms() < deadline)
        sleep_ms(20);
    return v;
}

/* ---- a provisioned world: user, agent, room with the agent in it ----------- */

typedef struct world {
    tk_band b;
    char user_id[40];
    char agent_id[40];
    char agent_name[64];
    char agent_key[128];
    char room_id[40];
} world;

static int register_agent(tk_band *b, const char *name, char id[40], char key[128])
{
    char json[256];
    snprintf(json, sizeof json,
             "{\"agent\":{\"name\":\"%s\",\"description\":\"E2E baseline test agent (sandbox)\"}}",
             name);
    cJSON *doc = call(b, "POST", "/api/v1/me/agents/register", b->user_key, json, 201);
    snprintf(id, 40, "%s", jstr(doc, "data.agent.id"));
    if (key)
        snprintf(key, 128, "%s", jstr(doc, "data.credentials.api_key"));
    cJSON_Delete(doc);
    return *id ? 0 : -1;
}

static int create_room(world *w, char room_id[40])
{
    cJSON *doc = call(&w->b, "POST", "/api/v1/me/chats", w->b.user_key,
                      "{\"chat\":{\"title\":\"Sandbox smoke \xe2\x80\x94 1a2b3c4d\"}}", 201);
    snprintf(room_id, 40, "%s", jstr(doc, "data.id"));
    cJSON_Delete(doc);
    return *room_id ? 0 : -1;
}

static int add_agent(world *w, const char *room_id)
{
    char path[128], json[128];
    snprintf(path, sizeof path, "/api/v1/me/chats/%s/participants", room_id);
    snprintf(json, sizeof json, "{\"participant\":{\"participant_id\":\"%s\",\"role\":\"member\"}}",
             w->agent_id);
    cJSON *doc = call(&w->b, "POST", path, w->b.user_key, json, 201);
    int ok = strcmp(jstr(doc, "data.type"), "Agent") == 0;
    cJSON_Delete(doc);
    return ok ? 0 : -1;
}

static int world_up_with(world *w, const tk_band_opts *o)
{
    memset(w, 0, sizeof *w);
    if (!UNIT_CHECK(tk_band_start_opts(&w->b, o) == 0, "fake-band did not start"))
        return -1;
    cJSON *me = call(&w->b, "GET", "/api/v1/me/profile", w->b.user_key, NULL, 200);
    snprintf(w->user_id, sizeof w->user_id, "%s", jstr(me, "data.id"));
    cJSON_Delete(me);
    snprintf(w->agent_name, sizeof w->agent_name, "e2e-band-1a2b3c4d-sandbox");
    int rc = register_agent(&w->b, w->agent_name, w->agent_id, w->agent_key) ||
             create_room(w, w->room_id) || add_agent(w, w->room_id);
    return UNIT_CHECK(rc == 0 && *w->user_id, "provisioning the world failed") ? 0 : -1;
}

static int world_up(world *w)
{
    tk_band_opts o = {0};
    return world_up_with(w, &o);
}

static void world_down(world *w)
{
    UNIT_CHECK(tk_band_stop(&w->b) == 0, "fake-band did not stop cleanly");
}

static tk_ws *agent_socket(world *w)
{
    char target[512];
    int status = 0;
    snprintf(target, sizeof target, "/api/v1/socket/websocket?api_key=%s&vsn=2.0.0&agent_id=%s",
             w->agent_key, w->agent_id);
    tk_ws *ws = tk_ws_open(w->b.port, target, w->agent_key, &status);
    UNIT_CHECK(ws != NULL, "agent upgrade answered %d", status);
    return ws;
}

static tk_ws *user_socket(world *w)
{
    int status = 0;
    tk_ws *ws = tk_ws_open(w->b.port, "/api/v1/socket/websocket?vsn=2.0.0", w->b.user_key, &status);
    UNIT_CHECK(ws != NULL, "user upgrade answered %d", status);
    return ws;
}

static int join(tk_ws *ws, const char *prefix, const char *id, char join_ref[16])
{
    char topic[128], reason[64];
    snprintf(topic, sizeof topic, "%s:%s", prefix, id);
    int rc = tk_ws_join(ws, topic, join_ref, reason, sizeof reason, WAIT_MS);
    return UNIT_CHECK(rc == 1, "join %s: %d (%s)", topic, rc, reason) ? 0 : -1;
}

/* The agent's joins, in the SDK's order; the chat_room join_ref comes back. */
static int join_agent(world *w, tk_ws *ws, char room_ref[16])
{
    char ref[16], participants_ref[16];
    return join(ws, "agent_control", w->agent_id, ref) ||
           join(ws, "agent_rooms", w->agent_id, ref) ||
           join(ws, "chat_room", w->room_id, room_ref) ||
           join(ws, "room_participants", w->room_id, participants_ref);
}

static char *send_marker(world *w, const char *token)
{
    char path[128], json[512];
    snprintf(path, sizeof path, "/api/v1/me/chats/%s/messages", w->room_id);
    snprintf(json, sizeof json,
             "{\"message\":{\"content\":\"@%s "
             "marker:%s\",\"mentions\":[{\"id\":\"%s\",\"name\":\"%s\"}]}}",
             w->agent_name, token, w->agent_id, w->agent_name);
    cJSON *doc = call(&w->b, "POST", path, w->b.user_key, json, 201);
    UNIT_CHECK(cJSON_IsTrue(jget(doc, "data.success")), "send: success is not true");
    UNIT_CHECK(strcmp(jstr(doc, "data.recipients.0.id"), w->agent_id) == 0, "send: recipient");
    char *id = strdup(jstr(doc, "data.id"));
    cJSON_Delete(doc);
    return id;
}

static cJSON *mark(world *w, const char *message_id, const char *what, const char *json, long want)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/agent/chats/%s/messages/%s/%s", w->room_id, message_id,
             what);
    return call(&w->b, "POST", path, w->agent_key, json, want);
}

/* The next push `event` on the topic, checked to carry `join_ref`. */
static cJSON *expect_push(tk_ws *ws, const char *prefix, const char *id, const char *event,
                          const char *join_ref)
{
    char topic[128];
    snprintf(topic, sizeof topic, "%s:%s", prefix, id);
    cJSON *f = tk_ws_wait(ws, topic, event, NULL, WAIT_MS);
    if (!UNIT_CHECK(f != NULL, "no %s on %s", event, topic))
        return NULL;
    UNIT_CHECK(strcmp(jstr(f, "0"), join_ref) == 0, "%s on %s carries join_ref %s, wanted %s",
               event, topic, jstr(f, "0"), join_ref);
    UNIT_CHECK(cJSON_IsNull(jget(f, "1")), "%s: a push has a null ref", event);
    return f;
}

/* ---- process ---------------------------------------------------------------- */

static void test_starts_reports_and_stops_on_sigterm(void)
{
    tk_band b;
    if (!UNIT_CHECK(tk_band_start(&b, NULL) == 0, "start"))
        return;
    UNIT_CHECK(b.port > 0 && b.control_port > 0 && b.port != b.control_port, "ports %d %d",
               b.port, b.control_port);
    int agents = -1, rooms = -1;
    UNIT_CHECK(tk_band_stats(&b, &agents, &rooms) == 0 && agents == 0 && rooms == 0,
               "fresh stats: %d agents, %d rooms", agents, rooms);
    UNIT_CHECK(tk_band_stat(&b, "ws_connections") == 0, "no sockets yet");
    /* A socket still open at SIGTERM must not keep it alive or leak. */
    int status = 0;
    tk_ws *ws = tk_ws_open(b.port, "/api/v1/socket/websocket?vsn=2.0.0", b.user_key, &status);
    UNIT_CHECK(ws && stat_eventually(&b, "ws_connections", 1, WAIT_MS) == 1, "socket: %d", status);
    pid_t pid = b.pid;
    UNIT_CHECK(tk_band_stop(&b) == 0, "SIGTERM did not end it with status 0");
    UNIT_CHECK(kill(pid, 0) != 0 && errno == ESRCH, "the process is still there");
    UNIT_CHECK(ws && tk_ws_closed(ws, WAIT_MS, NULL, 0) != TK_WS_OPEN, "the socket outlived the fake");
    tk_ws_free(ws);
}

static void test_shutdown_endpoint_stops_it(void)
{
    tk_band b;
    if (!UNIT_CHECK(tk_band_start(&b, NULL) == 0, "start"))
        return;
    long status;
    char *body = tk_band_http(b.control_url, "POST", "/_fake/shutdown", NULL, "{}", &status, NULL);
    UNIT_CHECK(status == 200 && body && strstr(body, "\"ok\":true"), "shutdown: %ld %s", status,
               body ? body : "");
    free(body);
    long deadline = now_ms() + 5000;
    while (kill(b.pid, 0) == 0 && now_ms() < deadline) {
        int st;
        if (waitpid(b.pid, &st, WNOHANG) == b.pid) {
            UNIT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %d", st);
            b.pid = 0;
            break;
        }
        sleep_ms(10);
    }
    UNIT_CHECK(b.pid == 0, "still running 5 s after /_fake/shutdown");
    tk_band_stop(&b);
}

static void test_log_names_requests_without_keys(void)
{
    world w;
    if (world_up(&w) != 0)
        return world_down(&w);
    tk_ws *ws = agent_socket(&w);
    tk_ws_free(ws);
    char *log = tk_read(w.b.log_path, NULL);
    UNIT_CHECK(log && strstr(log, "POST /api/v1/me/agents/register 201"),
               "log lacks the register line");
    UNIT_CHECK(log && strstr(log, "GET /api/v1/socket/websocket 101"),
               "log lacks the upgrade line");
    UNIT_CHECK(log && !strstr(log, w.agent_key) && !strstr(log, w.b.user_key),
               "a key is in the log");
    free(log);
    world_down(&w);
}

/* ---- REST -------------------------------------------------------------------- */

static void test_rest_refuses_bad_keys_and_paths(void)
{
    world w;
    if (world_up(&w) != 0)
        return world_down(&w);
    expect_error(&w.b, "GET", "/api/v1/me/profile", NULL, NULL, 401, "unauthorized");
    expect_error(&w.b, "GET", "/api/v1/me/profile", "not-a-key-at-all", NULL, 401, "unauthorized");
    expect_error(&w.b, "GET", "/api/v1/agent/me", "not-a-key-at-all", NULL, 401, "unauthorized");
    expect_error(&w.b, "GET", "/api/v1/me/profile", w.agent_key, NULL, 403, "forbidden");
    expect_error(&w.b, "GET", "/api/v1/agent/me", w.b.user_key, NULL, 403, "forbidden");
    expect_error(&w.b, "GET", "/api/v1/nothing/here", w.b.user_key, NULL, 404, "not_found");
    expect_error(&w.b, "PUT", "/api/v1/me/profile", w.b.user_key, "{}", 405, "method_not_allowed");
    world_down(&w);
}

static void test_register_and_agent_me(void)
{
    world w;
    if (world_up(&w) != 0)
        return world_down(&w);
    cJSON *me = call(&w.b, "GET", "/api/v1/agent/me", w.agent_key, NULL, 200);
    UNIT_CHECK(strcmp(jstr(me, "data.id"), w.agent_id) == 0, "me.id");
    UNIT_CHECK(strcmp(jstr(me, "data.name"), w.agent_name) == 0, "me.name");
    UNIT_CHECK(*jstr(me, "data.description"), "me.description is empty");
    UNIT_CHECK(strcmp(jstr(me, "data.handle"), "smoke-user/e2e-band-1a2b3c4d-sandbox") == 0,
               "me.handle %s", jstr(me, "data.handle"));
    UNIT_CHECK(strcmp(jstr(me, "data.owner_uuid"), w.user_id) == 0, "me.owner_uuid");
    UNIT_CHECK(cJSON_IsObject(jget(me, "data.feature_flags")), "me.feature_flags");
    UNIT_CHECK(strlen(jstr(me, "data.inserted_at")) >= 20 && *jstr(me, "data.updated_at"),
               "me timestamps");
    cJSON_Delete(me);
    cJSON *chats =
        call(&w.b, "GET", "/api/v1/agent/chats?page=1&page_size=100", w.agent_key, NULL, 200);
    UNIT_CHECK(strcmp(jstr(chats, "data.0.id"), w.room_id) == 0, "agent chats list the room");
    UNIT_CHECK(jnum(chats, "metadata.total_pages") == 1, "total_pages %g",
               jnum(chats, "metadata.total_pages"));
    cJSON_Delete(chats);
    expect_error(&w.b, "POST", "/api/v1/me/agents/register", w.b.user_key,
                 "{\"agent\":{\"name\":\"e2e-band-1a2b3c4d-sandbox\"}}", 422, "validation_error");
    world_down(&w);
}

static void test_list_agents_filters_and_pages(void)
{
    world w;
    if (world_up(&w) != 0)
        return world_down(&w);
    char ids[5][40];
    for (int i = 0; i < 5; i++) {
        char name[64];
        snprintf(name, sizeof name, "E2E-band-0000000%d-sandbox", i);
        register_agent(&w.b, name, ids[i], NULL);
    }
    register_agent(&w.b, "unrelated-agent", (char[40]){0}, NULL);
    char path[256] = "/api/v1/me/agents?name=e2e-band-0&limit=2";
    int seen = 0, pages = 0;
    for (int more = 1; more && pages < 10; pages++) {
        cJSON *doc = call(&w.b, "GET", path, w.b.user_key, NULL, 200);
        const cJSON *item;
        cJSON_ArrayForEach(item, jget(doc, "data"))
        {
            /* newest first: the last registered comes first */
            UNIT_CHECK(seen < 5 && strcmp(jstr(item, "id"), ids[4 - seen]) == 0,
                       "item %d out of order", seen);
            seen++;
        }
        UNIT_CHECK(jnum(doc, "metadata.limit") == 2, "metadata.limit");
        UNIT_CHECK(cJSON_GetArraySize(jget(doc, "metadata.available_filters")) > 0 &&
                       cJSON_GetArraySize(jget(doc, "metadata.sortable_fields")) > 0,
                   "filters and sortable fields");
        more = cJSON_IsTrue(jget(doc, "metadata.has_more"));
        if (more)
            snprintf(path, sizeof path, "/api/v1/me/agents?name=e2e-band-0&limit=2&cursor=%s",
                     jstr(doc, "metadata.next_cursor"));
        else
            UNIT_CHECK(cJSON_IsNull(jget(doc, "metadata.next_cursor")), "last page has a cursor");
        cJSON_Delete(doc);
    }
    UNIT_CHECK(seen == 5 && pages == 3, "saw %d agents in %d pages", seen, pages);
    expect_error(&w.b, "GET", "/api/v1/me/agents?limit=0", w.b.user_key, NULL, 422,
                 "validation_error");
    expect_error(&w.b, "GET", "/api/v1/me/agents?cursor=nonsense", w.b.user_key, NULL, 422,
                 "validation_error");
    world_down(&w);
}

/* Copies a template, writing the user's id for @USER and the agent's for @AGENT. */
static void fill_ids(char *out, size_t cap, const char *tmpl, const world *w)
{
    static const char user[] = "@USER", agent[] = "@AGENT";
    size_t n = 0;
    while (*tmpl && n + sizeof w->user_id < cap) {
        if (strncmp(tmpl, user, strlen(user)) == 0) {
            n += (size_t)snprintf(out + n, cap - n, "%s", w->user_id);
            tmpl += strlen(user);
        } else if (strncmp(tmpl, agent, strlen(agent)) == 0) {
            n += (size_t)snprintf(out + n, cap - n, "%s", w->agent_id);
            tmpl += strlen(agent);
        } else {
            out[n++] = *tmpl++;
        }
    }
    out[n] = '\0';
}

static void test_messages_are_validated(void)
{
    world w;
    if (world_up(&w) != 0)
        return world_down(&w);
    char path[128], json[512];
    snprintf(path, sizeof path, "/api/v1/me/chats/%s/messages", w.room_id);
    static const struct {
        const char *mentions;
        const char *code;
    } cases[] = {
        {"[]", "mentions_required"},
        {"[{\"id\":\"00000000-0000-4000-8000-000000000000\"}]",
         "mentioned_participant_not_in_room"},
        {"[{\"id\":\"@USER\"}]", "cannot_mention_self"},
        {"[{\"id\":\"@AGENT\"},{\"handle\":\"smoke-user/e2e-band-1a2b3c4d-sandbox\"}]",
         "duplicate_mentions"},
        {"[{\"id\":\"@AGENT\",\"kind\":\"shout\"}]", "invalid_mention_kind"},
        {"[{}]", "mention_missing_identifier"},
        {"[{\"handle\":\"nobody/none\"}]", "handle_not_found"},
        {"[{\"id\":\"@AGENT\",\"kind\":\"reference\"}]", "mentions_required"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char mentions[256];
        fill_ids(mentions, sizeof mentions, cases[i].mentions, &w);
        snprintf(json, sizeof json, "{\"message\":{\"content\":\"hi\",\"mentions\":%s}}", mentions);
        expect_error(&w.b, "POST", path, w.b.user_key, json, 422, cases[i].code);
    }
    expect_error(&w.b, "POST", path, w.b.user_key, "{not json", 400, "invalid_json");
    expect_error(&w.b, "POST", path, w.b.user_key, "[1,2]", 422, "validation_error");
    expect_error(&w.b, "POST", path, w.b.user_key, "{\"message\":{\"mentions\":[]}}", 422,
                 "validation_error");

    char agent_path[128];
    snprintf(agent_path, sizeof agent_path, "/api/v1/agent/chats/%s/messages", w.room_id);
    expect_error(&w.b, "POST", agent_path, w.agent_key,
                 "{\"message\":{\"content\":\"sandbox-ack:x\",\"mentions\":[]}}", 422,
                 "mentions_required");
    char *mid = send_marker(&w, "abc");
    char mark_path[256];
    snprintf(mark_path, sizeof mark_path, "/api/v1/agent/chats/%s/messages/%s/processed", w.room_id,
             mid);
    expect_error(&w.b, "POST", mark_path, w.agent_key, NULL, 422, "no_open_attempt");
    snprintf(mark_path, sizeof mark_path, "/api/v1/agent/chats/%s/activity", w.room_id);
    expect_error(&w.b, "POST", mark_path, w.agent_key, "{\"working\":\"yes\"}", 422,
                 "validation_error");
    free(mid);
    world_down(&w);
}

/* ---- the whole exchange ---------------------------------------------------- */

static void check_delivery(const cJSON *frame, const char *agent_id, const char *status)
{
    char path[128];
    snprintf(path, sizeof path, "4.metadata.delivery_status.%s.status", agent_id);
    UNIT_CHECK(strcmp(jstr(frame, path), status) == 0, "delivery status %s, wanted %s",
               jstr(frame, path), status);
}

static void test_full_exchange(void)
{
    world w;
    char agent_room_ref[16], user_room_ref[16], path[256];
    if (world_up(&w) != 0)
        return world_down(&w);
    tk_ws *agent = agent_socket(&w), *user = user_socket(&w);
    if (!agent || !user || join_agent(&w, agent, agent_room_ref) ||
        join(user, "chat_room", w.room_id, user_room_ref))
        goto out;

    char *mid = send_marker(&w, "0123456789ab");
    cJSON *f = expect_push(agent, "chat_room", w.room_id, "message_created", agent_room_ref);
    UNIT_CHECK(strcmp(jstr(f, "4.id"), mid) == 0 && strcmp(jstr(f, "4.sender_type"), "User") == 0 &&
                   strstr(jstr(f, "4.content"), "marker:0123456789ab") &&
                   strcmp(jstr(f, "4.metadata.mentions.0.id"), w.agent_id) == 0,
               "agent's message_created payload");
    cJSON_Delete(f);
    cJSON_Delete(expect_push(user, "chat_room", w.room_id, "message_created", user_room_ref));

    snprintf(path, sizeof path, "/api/v1/agent/chats/%s/messages/next", w.room_id);
    cJSON *next = call(&w.b, "GET", path, w.agent_key, NULL, 200);
    UNIT_CHECK(strcmp(jstr(next, "data.id"), mid) == 0, "/next returned another message");
    cJSON_Delete(next);

    cJSON *m = mark(&w, mid, "processing", NULL, 200);
    UNIT_CHECK(jnum(m, "data.attempt_number") == 1 &&
                   strcmp(jstr(m, "data.status"), "processing") == 0 &&
                   cJSON_IsTrue(jget(m, "data.success")),
               "processing answer");
    cJSON_Delete(m);
    f = expect_push(user, "chat_room", w.room_id, "message_updated", user_room_ref);
    check_delivery(f, w.agent_id, "processing");
    cJSON_Delete(f);
    snprintf(path, sizeof path, "/api/v1/agent/chats/%s/messages?status=processing&page=1",
             w.room_id);
    cJSON *stuck = call(&w.b, "GET", path, w.agent_key, NULL, 200);
    UNIT_CHECK(jnum(stuck, "metadata.total_count") == 1 && jnum(stuck, "metadata.total_pages") == 1,
               "one message processing");
    cJSON_Delete(stuck);

    snprintf(path, sizeof path, "/api/v1/agent/chats/%s/activity", w.room_id);
    cJSON_Delete(call(&w.b, "POST", path, w.agent_key, "{\"working\":true}", 200));
    snprintf(path, sizeof path, "/api/v1/agent/chats/%s/events", w.room_id);
    cJSON_Delete(call(
        &w.b, "POST", path, w.agent_key,
        "{\"event\":{\"content\":\"{}\",\"message_type\":\"tool_call\",\"metadata\":null}}", 201));
    snprintf(path, sizeof path, "/api/v1/agent/chats/%s/participants", w.room_id);
    cJSON *people = call(&w.b, "GET", path, w.agent_key, NULL, 200);
    UNIT_CHECK(strcmp(jstr(people, "data.0.type"), "User") == 0 &&
                   strcmp(jstr(people, "data.0.handle"), "smoke-user") == 0,
               "the user is listed first");
    cJSON_Delete(people);

    char json[256];
    snprintf(path, sizeof path, "/api/v1/agent/chats/%s/messages", w.room_id);
    snprintf(json, sizeof json,
             "{\"message\":{\"content\":\"sandbox-ack:0123456789ab\",\"mentions\":[{\"id\":\"%s\","
             "\"handle\":\"smoke-user\"}]}}",
             w.user_id);
    cJSON_Delete(call(&w.b, "POST", path, w.agent_key, json, 201));
    f = expect_push(user, "chat_room", w.room_id, "message_created", user_room_ref);
    UNIT_CHECK(strcmp(jstr(f, "4.sender_type"), "Agent") == 0 &&
                   strcmp(jstr(f, "4.sender_id"), w.agent_id) == 0 &&
                   strcmp(jstr(f, "4.content"), "sandbox-ack:0123456789ab") == 0,
               "the reply reached the user");
    cJSON_Delete(f);

    cJSON_Delete(mark(&w, mid, "processed", "{}", 200));
    f = expect_push(user, "chat_room", w.room_id, "message_updated", user_room_ref);
    check_delivery(f, w.agent_id, "processed");
    char processed_at[128];
    snprintf(processed_at, sizeof processed_at, "4.metadata.delivery_status.%s.processed_at",
             w.agent_id);
    UNIT_CHECK(*jstr(f, processed_at), "processed_at missing");
    cJSON_Delete(f);

    long status;
    snprintf(path, sizeof path, "/api/v1/agent/chats/%s/messages/next", w.room_id);
    char *empty = tk_band_get(&w.b, path, w.agent_key, &status);
    UNIT_CHECK(status == 204 && empty && !*empty, "/next after processed: %ld", status);
    free(empty);
    UNIT_CHECK(tk_ws_wait(agent, NULL, "message_created", NULL, QUIET_MS) == NULL,
               "the agent heard its own reply");
    snprintf(path, sizeof path, "/api/v1/agent/chats/%s/context", w.room_id);
    cJSON *ctx = call(&w.b, "GET", path, w.agent_key, NULL, 200);
    UNIT_CHECK(cJSON_GetArraySize(jget(ctx, "data")) == 3 &&
                   strcmp(jstr(ctx, "data.0.id"), mid) == 0,
               "context: marker, event, reply; oldest first");
    cJSON_Delete(ctx);
    snprintf(path, sizeof path, "/api/v1/me/chats/%s/messages?message_type=text&limit=100",
             w.room_id);
    cJSON *list = call(&w.b, "GET", path, w.b.user_key, NULL, 200);
    UNIT_CHECK(cJSON_GetArraySize(jget(list, "data")) == 2 &&
                   strcmp(jstr(list, "data.0.sender_type"), "Agent") == 0,
               "messages: newest first");
    cJSON_Delete(list);
    free(mid);
out:
    tk_ws_free(agent);
    tk_ws_free(user);
    world_down(&w);
}

static void test_failed_attempts_stay_actionable(void)
{
    world w;
    char room_ref[16], path[256], attempt_error[160];
    if (world_up(&w) != 0)
        return world_down(&w);
    tk_ws *user = user_socket(&w);
    if (!user || join(user, "chat_room", w.room_id, room_ref))
        goto out;
    char *mid = send_marker(&w, "cafe00000000");
    cJSON_Delete(mark(&w, mid, "processing", NULL, 200));
    cJSON *m = mark(&w, mid, "failed", "{\"error\":\"boom\"}", 200);
    UNIT_CHECK(strcmp(jstr(m, "data.status"), "failed") == 0, "failed answer");
    cJSON_Delete(m);
    cJSON_Delete(tk_ws_wait(user, NULL, "message_updated", NULL, WAIT_MS)); /* processing */
    cJSON *f = expect_push(user, "chat_room", w.room_id, "message_updated", room_ref);
    check_delivery(f, w.agent_id, "failed");
    snprintf(attempt_error, sizeof attempt_error, "4.metadata.delivery_status.%s.attempts.0.error",
             w.agent_id);
    UNIT_CHECK(strcmp(jstr(f, attempt_error), "boom") == 0, "attempt error %s",
               jstr(f, attempt_error));
    cJSON_Delete(f);
    snprintf(path, sizeof path, "/api/v1/agent/chats/%s/messages/next", w.room_id);
    cJSON *next = call(&w.b, "GET", path, w.agent_key, NULL, 200);
    UNIT_CHECK(strcmp(jstr(next, "data.id"), mid) == 0, "a failed message left /next");
    cJSON_Delete(next);
    m = mark(&w, mid, "processing", "{}", 200);
    UNIT_CHECK(jnum(m, "data.attempt_number") == 2, "second attempt numbered %g",
               jnum(m, "data.attempt_number"));
    cJSON_Delete(m);
    cJSON_Delete(mark(&w, mid, "processed", NULL, 200));
    expect_error(&w.b, "POST", "/api/v1/agent/chats/x/messages/y/processing", w.agent_key, NULL,
                 404, "not_found");
    snprintf(path, sizeof path, "/api/v1/agent/chats/%s/messages/%s/processing", w.room_id, mid);
    expect_error(&w.b, "POST", path, w.agent_key, NULL, 422, "already_processed");
    free(mid);
out:
    tk_ws_free(user);
    world_down(&w);
}

static void test_users_are_kept_apart(void)
{
    tk_band b;
    char agent_id[40], path[128];
    if (!UNIT_CHECK(tk_band_start2(&b, NULL, NULL) == 0, "start with two users"))
        return;
    cJSON *me = call(&b, "GET", "/api/v1/me/profile", b.user_key2, NULL, 200);
    UNIT_CHECK(strcmp(jstr(me, "data.handle"), "smoke-user-2") == 0, "second handle %s",
               jstr(me, "data.handle"));
    cJSON_Delete(me);
    register_agent(&b, "first-users-agent", agent_id, NULL);
    snprintf(path, sizeof path, "/api/v1/me/agents/%s?force=true", agent_id);
    expect_error(&b, "DELETE", path, b.user_key2, NULL, 403, "forbidden");
    cJSON *list = call(&b, "GET", "/api/v1/me/agents", b.user_key2, NULL, 200);
    UNIT_CHECK(cJSON_GetArraySize(jget(list, "data")) == 0,
               "the second user sees the first's agents");
    cJSON_Delete(list);
    cJSON *room = call(&b, "POST", "/api/v1/me/chats", b.user_key, "{\"chat\":{}}", 201);
    snprintf(path, sizeof path, "/api/v1/me/chats/%s/messages", jstr(room, "data.id"));
    expect_error(&b, "GET", path, b.user_key2, NULL, 403, "forbidden");
    cJSON_Delete(room);
    UNIT_CHECK(tk_band_stop(&b) == 0, "stop");
}

/* ---- WebSocket rules -------------------------------------------------------- */

static int upgrade_status(world *w, const char *query, const char *header_key)
{
    char target[512];
    int status = 0;
    snprintf(target, sizeof target, "/api/v1/socket/websocket%s", query);
    tk_ws_free(tk_ws_open(w->b.port, target, header_key, &status));
    return status;
}

static void test_upgrade_rules(void)
{
    world w;
    char q[400];
    if (world_up(&w) != 0)
        return world_down(&w);
    UNIT_CHECK(upgrade_status(&w, "?vsn=2.0.0&api_key=wrong-key-123", NULL) == 403, "bad key");
    UNIT_CHECK(upgrade_status(&w, "?vsn=2.0.0", NULL) == 403, "no key");
    snprintf(q, sizeof q, "?api_key=%s", w.b.user_key);
    UNIT_CHECK(upgrade_status(&w, q, NULL) == 400, "no vsn");
    snprintf(q, sizeof q, "?api_key=%s&vsn=1.0.0", w.b.user_key);
    UNIT_CHECK(upgrade_status(&w, q, NULL) == 400, "vsn 1.0.0");
    UNIT_CHECK(upgrade_status(&w, "?vsn=2.0.0&api_key=wrong-key-123", w.b.user_key) == 101,
               "the header wins over a bad query key");
    snprintf(q, sizeof q, "?vsn=2.0.0&api_key=%s", w.b.user_key);
    UNIT_CHECK(upgrade_status(&w, q, "wrong-key-123") == 403,
               "a bad header wins over a good query");
    snprintf(q, sizeof q, "?vsn=2.0.0&api_key=%s&agent_id=%s", w.agent_key, w.room_id);
    UNIT_CHECK(upgrade_status(&w, q, NULL) == 403, "agent_id of someone else");
    UNIT_CHECK(tk_band_stat(&w.b, "upgrade_attempts") == 7, "upgrade attempts counted");

    /* The owner's key with agent_id connects as the agent. */
    int status;
    snprintf(q, sizeof q, "/api/v1/socket/websocket?vsn=2.0.0&api_key=%s&agent_id=%s", w.b.user_key,
             w.agent_id);
    tk_ws *ws = tk_ws_open(w.b.port, q, NULL, &status);
    char ref[16], reason[64];
    UNIT_CHECK(ws && join(ws, "agent_control", w.agent_id, ref) == 0, "owner key as the agent");
    tk_ws_free(ws);

    ws = user_socket(&w);
    char topic[128];
    snprintf(topic, sizeof topic, "agent_control:%s", w.agent_id);
    UNIT_CHECK(ws && tk_ws_join(ws, topic, NULL, reason, sizeof reason, WAIT_MS) == 0 &&
                   strcmp(reason, "unauthorized") == 0,
               "a user joined an agent's control topic");
    UNIT_CHECK(ws && tk_ws_join(ws, "chat_room:00000000-0000-4000-8000-000000000000", NULL, reason,
                                sizeof reason, WAIT_MS) == 0,
               "joined a room that does not exist");
    tk_ws_push(ws, NULL, "phoenix", "heartbeat", "{}", ref);
    cJSON *beat = tk_ws_wait(ws, "phoenix", "phx_reply", ref, WAIT_MS);
    UNIT_CHECK(beat && strcmp(jstr(beat, "4.status"), "ok") == 0 && cJSON_IsNull(jget(beat, "0")),
               "heartbeat reply");
    cJSON_Delete(beat);
    char room_ref[16], leave_ref[16];
    join(ws, "chat_room", w.room_id, room_ref);
    snprintf(topic, sizeof topic, "chat_room:%s", w.room_id);
    tk_ws_push(ws, room_ref, topic, "phx_leave", "{}", leave_ref);
    cJSON *left = tk_ws_wait(ws, topic, "phx_reply", leave_ref, WAIT_MS);
    UNIT_CHECK(left && strcmp(jstr(left, "4.status"), "ok") == 0, "leave reply");
    cJSON_Delete(left);
    tk_ws_free(ws);
    world_down(&w);
}

static void test_last_agent_connection_wins(void)
{
    world w;
    char ref_a[16], ref_b[16];
    if (world_up(&w) != 0)
        return world_down(&w);
    tk_ws *a = agent_socket(&w);
    if (a && join(a, "agent_control", w.agent_id, ref_a) == 0) {
        tk_ws *b = agent_socket(&w);
        cJSON *f = expect_push(a, "agent_control", w.agent_id, "supersede", ref_a);
        UNIT_CHECK(f && strcmp(jstr(f, "4.reason"), "superseded") == 0, "supersede payload");
        cJSON_Delete(f);
        char reason[64];
        UNIT_CHECK(tk_ws_closed(a, WAIT_MS, reason, sizeof reason) == 1000,
                   "the older socket stays open");
        UNIT_CHECK(b && join(b, "agent_control", w.agent_id, ref_b) == 0, "the newer socket works");
        UNIT_CHECK(stat_eventually(&w.b, "agent_connections", 1, WAIT_MS) == 1,
                   "one agent connection");
        tk_ws_free(b);
    }
    tk_ws_free(a);
    world_down(&w);
}

static void test_room_added_and_room_deleted(void)
{
    world w;
    char rooms_ref[16], parts_ref[16], room2[40];
    if (world_up(&w) != 0)
        return world_down(&w);
    tk_ws *a = agent_socket(&w);
    if (!a || join(a, "agent_rooms", w.agent_id, rooms_ref) ||
        join(a, "room_participants", w.room_id, parts_ref))
        goto out;
    create_room(&w, room2);
    add_agent(&w, room2);
    cJSON *f = expect_push(a, "agent_rooms", w.agent_id, "room_added", rooms_ref);
    UNIT_CHECK(strcmp(jstr(f, "4.id"), room2) == 0 && *jstr(f, "4.inserted_at"),
               "room_added payload");
    cJSON_Delete(f);
    char path[128];
    snprintf(path, sizeof path, "/api/v1/me/chats/%s", w.room_id);
    cJSON_Delete(call(&w.b, "DELETE", path, w.b.user_key, NULL, 200));
    f = expect_push(a, "room_participants", w.room_id, "room_deleted", parts_ref);
    UNIT_CHECK(strcmp(jstr(f, "4.id"), w.room_id) == 0, "room_deleted payload");
    cJSON_Delete(f);
    int rooms = -1;
    UNIT_CHECK(tk_band_stats(&w.b, NULL, &rooms) == 0 && rooms == 1, "live rooms %d", rooms);
    snprintf(path, sizeof path, "/api/v1/me/chats/%s/participants", w.room_id);
    expect_error(&w.b, "GET", path, w.b.user_key, NULL, 404, "not_found");
out:
    tk_ws_free(a);
    world_down(&w);
}

static void test_delete_agent_revokes_and_closes(void)
{
    world w;
    char ref[16], parts_ref[16], path[128];
    if (world_up(&w) != 0)
        return world_down(&w);
    tk_ws *a = agent_socket(&w), *u = user_socket(&w);
    if (!a || !u || join(a, "agent_control", w.agent_id, ref) ||
        join(u, "room_participants", w.room_id, parts_ref))
        goto out;
    char *mid = send_marker(&w, "feedface0000");
    cJSON_Delete(mark(&w, mid, "processing", NULL, 200));
    free(mid);
    snprintf(path, sizeof path, "/api/v1/me/agents/%s", w.agent_id);
    expect_error(&w.b, "DELETE", path, w.b.user_key, NULL, 422, "has_execution_history");
    snprintf(path, sizeof path, "/api/v1/me/agents/%s?force=true", w.agent_id);
    cJSON *gone = call(&w.b, "DELETE", path, w.b.user_key, NULL, 200);
    UNIT_CHECK(jnum(gone, "data.executions_deleted") == 1, "executions_deleted");
    cJSON_Delete(gone);
    char reason[64] = "";
    int code = tk_ws_closed(a, WAIT_MS, reason, sizeof reason);
    UNIT_CHECK(code == 1008 && strcmp(reason, "agent deleted") == 0, "agent socket closed %d %s",
               code, reason);
    cJSON *f = expect_push(u, "room_participants", w.room_id, "participant_removed", parts_ref);
    UNIT_CHECK(strcmp(jstr(f, "4.id"), w.agent_id) == 0, "participant_removed payload");
    cJSON_Delete(f);
    expect_error(&w.b, "GET", "/api/v1/agent/me", w.agent_key, NULL, 401, "unauthorized");
    int agents = -1;
    UNIT_CHECK(tk_band_stats(&w.b, &agents, NULL) == 0 && agents == 0, "live agents %d", agents);
out:
    tk_ws_free(a);
    tk_ws_free(u);
    world_down(&w);
}

/* ---- faults --------------------------------------------------------------------- */

static void test_fault_drop_ws(void)
{
    world w;
    if (world_up(&w) != 0)
        return world_down(&w);
    tk_ws *a = agent_socket(&w), *u = user_socket(&w);
    UNIT_CHECK(stat_eventually(&w.b, "ws_connections", 2, WAIT_MS) == 2, "two sockets open");
    UNIT_CHECK(tk_band_control(&w.b, "{\"action\":\"drop_ws\"}") == 200, "drop_ws");
    UNIT_CHECK(a && tk_ws_closed(a, WAIT_MS, NULL, 0) == TK_WS_NO_CLOSE_FRAME,
               "agent: a close frame came");
    UNIT_CHECK(u && tk_ws_closed(u, WAIT_MS, NULL, 0) == TK_WS_NO_CLOSE_FRAME,
               "user: a close frame came");
    UNIT_CHECK(stat_eventually(&w.b, "ws_connections", 0, WAIT_MS) == 0, "sockets left after drop");
    tk_ws_free(a);
    tk_ws_free(u);
    tk_ws *again = agent_socket(&w);
    UNIT_CHECK(again != NULL, "cannot reconnect after a drop");
    tk_ws_free(again);
    world_down(&w);
}

static void test_fault_refuse(void)
{
    world w;
    if (world_up(&w) != 0)
        return world_down(&w);
    UNIT_CHECK(tk_band_control(&w.b, "{\"action\":\"refuse\",\"seconds\":1}") == 200, "refuse");
    long t0 = now_ms(), status = -1;
    char *body = tk_band_get(&w.b, "/api/v1/me/profile", w.b.user_key, &status);
    UNIT_CHECK(body == NULL && status == 0, "REST answered %ld while refusing", status);
    free(body);
    int ws_status = -1;
    tk_ws *ws =
        tk_ws_open(w.b.port, "/api/v1/socket/websocket?vsn=2.0.0", w.b.user_key, &ws_status);
    UNIT_CHECK(ws == NULL && ws_status == 0, "upgrade answered %d while refusing", ws_status);
    tk_ws_free(ws);
    UNIT_CHECK(tk_band_stat(&w.b, "live_rooms") == 1, "the control port stopped answering");
    long deadline = t0 + 3000;
    do {
        sleep_ms(100);
        free(body = tk_band_get(&w.b, "/api/v1/me/profile", w.b.user_key, &status));
    } while (status != 200 && now_ms() < deadline);
    UNIT_CHECK(status == 200 && now_ms() - t0 >= 900, "accepting again after %ld ms (status %ld)",
               now_ms() - t0, status);
    world_down(&w);
}

static void test_fault_close_codes(void)
{
    world w;
    if (world_up(&w) != 0)
        return world_down(&w);
    static const int codes[] = {1011, 1012};
    for (size_t i = 0; i < 2; i++) {
        tk_ws *a = agent_socket(&w);
        char json[128], reason[64] = "";
        snprintf(json, sizeof json, "{\"action\":\"close\",\"code\":%d,\"reason\":\"injected %d\"}",
                 codes[i], codes[i]);
        UNIT_CHECK(tk_band_control(&w.b, json) == 200, "close %d", codes[i]);
        int code = a ? tk_ws_closed(a, WAIT_MS, reason, sizeof reason) : -2;
        char want[32];
        snprintf(want, sizeof want, "injected %d", codes[i]);
        UNIT_CHECK(code == codes[i] && strcmp(reason, want) == 0, "closed with %d (%s)", code,
                   reason);
        tk_ws_free(a);
    }
    UNIT_CHECK(tk_band_control(&w.b, "{\"action\":\"close\",\"code\":1005}") == 400,
               "1005 accepted");
    world_down(&w);
}

static void test_fault_fail_rest(void)
{
    world w;
    if (world_up(&w) != 0)
        return world_down(&w);
    UNIT_CHECK(tk_band_control(&w.b, "{\"action\":\"fail_rest\",\"count\":2,\"status\":500}") ==
                   200,
               "fail_rest 500");
    UNIT_CHECK(tk_band_stat(&w.b, "live_agents") == 1, "a control call consumed a failure");
    expect_error(&w.b, "GET", "/api/v1/me/profile", w.b.user_key, NULL, 500, "internal_error");
    expect_error(&w.b, "GET", "/api/v1/agent/me", w.agent_key, NULL, 500, "internal_error");
    cJSON_Delete(call(&w.b, "GET", "/api/v1/me/profile", w.b.user_key, NULL, 200));

    UNIT_CHECK(
        tk_band_control(
            &w.b, "{\"action\":\"fail_rest\",\"count\":1,\"status\":429,\"retry_after\":7}") == 200,
        "fail_rest 429");
    long status, retry_after;
    char *body = tk_band_http(w.b.rest_url, "GET", "/api/v1/agent/me", w.agent_key, NULL, &status,
                              &retry_after);
    UNIT_CHECK(status == 429 && retry_after == 7 && body && strstr(body, "too_many_requests"),
               "429: status %ld, Retry-After %ld", status, retry_after);
    free(body);
    cJSON_Delete(call(&w.b, "GET", "/api/v1/agent/me", w.agent_key, NULL, 200));
    UNIT_CHECK(tk_band_control(&w.b, "{\"action\":\"fail_rest\",\"count\":1,\"status\":200}") ==
                   400,
               "status 200 accepted as a failure");

    /* Aimed failures hit only their method and path prefix. */
    UNIT_CHECK(tk_band_control(&w.b, "{\"action\":\"fail_rest\",\"count\":1,\"status\":503,"
                                     "\"match\":\"GET /api/v1/agent/\"}") == 200,
               "aimed fail_rest");
    cJSON_Delete(call(&w.b, "GET", "/api/v1/me/profile", w.b.user_key, NULL, 200));
    expect_error(&w.b, "GET", "/api/v1/agent/me", w.agent_key, NULL, 503, "service_unavailable");
    cJSON_Delete(call(&w.b, "GET", "/api/v1/agent/me", w.agent_key, NULL, 200));
    UNIT_CHECK(tk_band_control(&w.b, "{\"action\":\"fail_rest\",\"count\":1,\"status\":500,"
                                     "\"match\":\"nospace\"}") == 400,
               "a match without a method accepted");

    /* Plans add up, each aimed at its own call; count 0 cancels them all. */
    tk_band_control(&w.b, "{\"action\":\"fail_rest\",\"count\":1,\"status\":502,"
                          "\"match\":\"GET /api/v1/me/profile\"}");
    tk_band_control(&w.b, "{\"action\":\"fail_rest\",\"count\":1,\"status\":504,"
                          "\"match\":\"GET /api/v1/agent/me\"}");
    expect_error(&w.b, "GET", "/api/v1/agent/me", w.agent_key, NULL, 504, "gateway_timeout");
    expect_error(&w.b, "GET", "/api/v1/me/profile", w.b.user_key, NULL, 502, "bad_gateway");
    cJSON_Delete(call(&w.b, "GET", "/api/v1/me/profile", w.b.user_key, NULL, 200));
    tk_band_control(&w.b, "{\"action\":\"fail_rest\",\"count\":5,\"status\":500}");
    tk_band_control(&w.b, "{\"action\":\"fail_rest\",\"count\":0,\"status\":500}");
    cJSON_Delete(call(&w.b, "GET", "/api/v1/me/profile", w.b.user_key, NULL, 200));
    world_down(&w);
}

static void test_fault_delay(void)
{
    world w;
    if (world_up(&w) != 0)
        return world_down(&w);
    UNIT_CHECK(tk_band_control(&w.b, "{\"action\":\"delay\",\"ms\":400}") == 200, "delay");
    long t0 = now_ms();
    cJSON_Delete(call(&w.b, "GET", "/api/v1/me/profile", w.b.user_key, NULL, 200));
    long slow = now_ms() - t0;
    t0 = now_ms();
    UNIT_CHECK(tk_band_stat(&w.b, "live_agents") == 1, "stats");
    long control = now_ms() - t0;
    UNIT_CHECK(tk_band_control(&w.b, "{\"action\":\"delay\",\"ms\":0}") == 200, "delay 0");
    t0 = now_ms();
    cJSON_Delete(call(&w.b, "GET", "/api/v1/me/profile", w.b.user_key, NULL, 200));
    long fast = now_ms() - t0;
    UNIT_CHECK(slow >= 400 && control < 300 && fast < 300,
               "delayed %ld ms, control %ld ms, after %ld ms", slow, control, fast);
    UNIT_CHECK(tk_band_control(&w.b, "{\"action\":\"delay\",\"ms\":-5}") == 400,
               "negative delay accepted");
    world_down(&w);
}

static void test_fault_garbage(void)
{
    world w;
    char room_ref[16], ref[16];
    if (world_up(&w) != 0)
        return world_down(&w);
    tk_ws *u = user_socket(&w);
    if (!u || join(u, "chat_room", w.room_id, room_ref))
        goto out;
    UNIT_CHECK(tk_band_control(&w.b, "{\"action\":\"garbage\"}") == 200, "garbage");
    int bad_json = 0, short_array = 0, non_object = 0, huge_ref = 0;
    for (int i = 0; i < 4; i++) {
        char *text = tk_ws_recv(u, WAIT_MS);
        if (!text)
            break;
        cJSON *f = cJSON_Parse(text);
        if (!f)
            bad_json++;
        else if (cJSON_GetArraySize(f) == 4)
            short_array++;
        else if (cJSON_IsString(cJSON_GetArrayItem(f, 4)) && strcmp(jstr(f, "0"), room_ref) == 0)
            non_object++;
        else if (strlen(jstr(f, "1")) > 1000)
            huge_ref++;
        cJSON_Delete(f);
        free(text);
    }
    UNIT_CHECK(bad_json == 1 && short_array == 1 && non_object == 1 && huge_ref == 1,
               "garbage: %d bad JSON, %d short, %d non-object, %d huge ref", bad_json, short_array,
               non_object, huge_ref);
    tk_ws_send(u, "[\"1\",\"2\",\"phoenix\"]");
    tk_ws_send(u, "{\"topic\":\"phoenix\"}");
    tk_ws_push(u, NULL, "phoenix", "heartbeat", "{}", ref);
    cJSON *beat = tk_ws_wait(u, "phoenix", "phx_reply", ref, WAIT_MS);
    UNIT_CHECK(beat != NULL, "no heartbeat reply after garbage both ways");
    cJSON_Delete(beat);
out:
    tk_ws_free(u);
    world_down(&w);
}

static void test_seed_agent_and_control_errors(void)
{
    world w;
    if (world_up(&w) != 0)
        return world_down(&w);
    long status;
    char *body = tk_band_http(
        w.b.control_url, "POST", "/_fake/control", NULL,
        "{\"action\":\"seed_agent\",\"name\":\"e2e-band-deadbeef-sandbox\",\"age_minutes\":180}",
        &status, NULL);
    cJSON *doc = body ? cJSON_Parse(body) : NULL;
    UNIT_CHECK(status == 200 && strlen(jstr(doc, "id")) == 36, "seed_agent: %ld %s", status,
               body ? body : "");
    char seeded[40];
    snprintf(seeded, sizeof seeded, "%s", jstr(doc, "id"));
    cJSON_Delete(doc);
    free(body);
    cJSON *list =
        call(&w.b, "GET", "/api/v1/me/agents?name=e2e-band-&limit=100", w.b.user_key, NULL, 200);
    /* Newest first: the backdated one comes last, and is older by text too. */
    UNIT_CHECK(strcmp(jstr(list, "data.1.id"), seeded) == 0 &&
                   strcmp(jstr(list, "data.1.inserted_at"), jstr(list, "data.0.inserted_at")) < 0,
               "the seeded agent is not the older one");
    cJSON_Delete(list);
    int agents = -1;
    UNIT_CHECK(tk_band_stats(&w.b, &agents, NULL) == 0 && agents == 2, "live agents %d", agents);
    UNIT_CHECK(tk_band_stat(&w.b, "rest_calls") >= 5, "rest calls not counted");
    UNIT_CHECK(tk_band_control(&w.b, "{\"action\":\"seed_agent\",\"age_minutes\":1}") == 400,
               "seed without name");
    UNIT_CHECK(tk_band_control(&w.b, "{\"action\":\"explode\"}") == 400, "unknown action");
    UNIT_CHECK(tk_band_control(&w.b, "not json") == 400, "not JSON");
    UNIT_CHECK(tk_band_control(&w.b, "{\"action\":\"refuse\",\"seconds\":\"1\"}") == 400,
               "string seconds");
    world_down(&w);
}


/* The platform's heartbeat timeout: an agent socket that sends nothing
 * for the configured time is dropped without a close frame; one that
 * beats in time stays. User sockets are exempt (a listed deviation: the
 * rehearsal scales the platform's clock, band-smoke's observer keeps real
 * time). 400 ms here; the rehearsal gives 45 s, scaled. */
static void test_heartbeat_timeout_drops_silent_agent(void)
{
    world w;
    tk_band_opts o = {.heartbeat_timeout_ms = 400};
    if (world_up_with(&w, &o) != 0)
        return;
    tk_ws *agent = agent_socket(&w), *user = user_socket(&w);
    if (agent && user) {
        int64_t until = now_ms() + 1500;
        int kept = 1;
        while (now_ms() < until && kept) {
            char ref[16];
            cJSON *reply = tk_ws_push(agent, NULL, "phoenix", "heartbeat", "{}", ref) == 0
                               ? tk_ws_wait(agent, "phoenix", "phx_reply", ref, 1000)
                               : NULL;
            kept = reply != NULL;
            cJSON_Delete(reply);
            struct timespec nap = {0, 150 * 1000000L};
            nanosleep(&nap, NULL);
        }
        UNIT_CHECK(kept, "an agent beating every 150 ms was dropped");
        UNIT_CHECK(tk_ws_closed(agent, 1500, NULL, 0) == TK_WS_NO_CLOSE_FRAME,
                   "the silent agent was not dropped without a close frame");
        CU_ASSERT_EQUAL(tk_band_stat(&w.b, "heartbeat_drops"), 1);
        UNIT_CHECK(tk_ws_closed(user, 100, NULL, 0) == TK_WS_OPEN, "the user socket was dropped");
    }
    tk_ws_free(agent);
    tk_ws_free(user);
    world_down(&w);
}

const unit_case unit_cases[] = {
    {"heartbeat_timeout_drops_silent_agent", test_heartbeat_timeout_drops_silent_agent},
    {"starts_reports_and_stops_on_sigterm", test_starts_reports_and_stops_on_sigterm},
    {"shutdown_endpoint_stops_it", test_shutdown_endpoint_stops_it},
    {"log_names_requests_without_keys", test_log_names_requests_without_keys},
    {"rest_refuses_bad_keys_and_paths", test_rest_refuses_bad_keys_and_paths},
    {"register_and_agent_me", test_register_and_agent_me},
    {"list_agents_filters_and_pages", test_list_agents_filters_and_pages},
    {"messages_are_validated", test_messages_are_validated},
    {"full_exchange", test_full_exchange},
    {"failed_attempts_stay_actionable", test_failed_attempts_stay_actionable},
    {"users_are_kept_apart", test_users_are_kept_apart},
    {"upgrade_rules", test_upgrade_rules},
    {"last_agent_connection_wins", test_last_agent_connection_wins},
    {"room_added_and_room_deleted", test_room_added_and_room_deleted},
    {"delete_agent_revokes_and_closes", test_delete_agent_revokes_and_closes},
    {"fault_drop_ws", test_fault_drop_ws},
    {"fault_refuse", test_fault_refuse},
    {"fault_close_codes", test_fault_close_codes},
    {"fault_fail_rest", test_fault_fail_rest},
    {"fault_delay", test_fault_delay},
    {"fault_garbage", test_fault_garbage},
    {"seed_agent_and_control_errors", test_seed_agent_and_control_errors},
    {NULL, NULL},
};
