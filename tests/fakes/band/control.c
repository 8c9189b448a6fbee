#include "control.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "reply.h"
#include "ws.h"

#define WHY_SZ FAULTS_WHY_SZ
#define SEED_AGE_MAX_MINUTES (366 * 24 * 60)

typedef struct control_action {
    const char *name;
    /* 0 when done (answer may get more fields), -1 with why filled. */
    int (*run)(server *srv, const cJSON *body, cJSON *answer, char why[WHY_SZ]);
} control_action;

static int act_drop_ws(server *srv, const cJSON *body, cJSON *answer, char why[WHY_SZ])
{
    (void)body, (void)answer, (void)why;
    ws_drop_all(srv);
    return 0;
}

static int act_refuse(server *srv, const cJSON *body, cJSON *answer, char why[WHY_SZ])
{
    (void)answer;
    return faults_plan_refuse(&srv->faults, body, clock_mono_ms(), why);
}

static int sendable_close_code(int code)
{
    /* 1005, 1006 and 1015 are reserved for "none came"; 1004 is unassigned. */
    return (code >= 1000 && code <= 1014 && code != 1004 && code != 1005 && code != 1006) ||
           (code >= 3000 && code <= 4999);
}

static int act_close(server *srv, const cJSON *body, cJSON *answer, char why[WHY_SZ])
{
    (void)answer;
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(body, "code");
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(body, "reason");
    if (!cJSON_IsNumber(code) || !sendable_close_code(code->valueint)) {
        snprintf(why, WHY_SZ, "code must be a close code a server may send (e.g. 1011, 1012)");
        return -1;
    }
    if (reason && (!cJSON_IsString(reason) || strlen(reason->valuestring) > 123)) {
        snprintf(why, WHY_SZ, "reason must be a string of at most 123 bytes");
        return -1;
    }
    ws_close_all(srv, code->valueint, reason ? reason->valuestring : "");
    return 0;
}

static int act_fail_rest(server *srv, const cJSON *body, cJSON *answer, char why[WHY_SZ])
{
    (void)answer;
    return faults_plan_failures(&srv->faults, body, why);
}

static int act_delay(server *srv, const cJSON *body, cJSON *answer, char why[WHY_SZ])
{
    (void)answer;
    return faults_plan_delay(&srv->faults, body, why);
}

static int act_garbage(server *srv, const cJSON *body, cJSON *answer, char why[WHY_SZ])
{
    (void)body, (void)answer, (void)why;
    ws_garbage_all(srv);
    return 0;
}

static int act_seed_agent(server *srv, const cJSON *body, cJSON *answer, char why[WHY_SZ])
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(body, "name");
    const cJSON *age = cJSON_GetObjectItemCaseSensitive(body, "age_minutes");
    const cJSON *description = cJSON_GetObjectItemCaseSensitive(body, "description");
    store_user *owner = srv->st->users.len ? srv->st->users.items[0] : NULL;
    if (!owner) {
        snprintf(why, WHY_SZ, "there is no user to own the agent");
        return -1;
    }
    if (!cJSON_IsString(name) || !*name->valuestring ||
        strlen(name->valuestring) > STORE_NAME_MAX) {
        snprintf(why, WHY_SZ, "name must be a non-empty string of at most %d bytes",
                 STORE_NAME_MAX);
        return -1;
    }
    if (!cJSON_IsNumber(age) || age->valuedouble < 0 || age->valuedouble > SEED_AGE_MAX_MINUTES) {
        snprintf(why, WHY_SZ, "age_minutes must be a number from 0 to %d", SEED_AGE_MAX_MINUTES);
        return -1;
    }
    if (store_agent_named(srv->st, owner, name->valuestring)) {
        snprintf(why, WHY_SZ, "the first user already has an agent with that name");
        return -1;
    }
    int64_t inserted = clock_wall_ms(NULL) - (int64_t)(age->valuedouble * 60000.0);
    store_agent *a = store_register_agent(
        srv->st, owner, name->valuestring,
        cJSON_IsString(description) ? description->valuestring : "seeded by a test", inserted);
    cJSON_AddStringToObject(answer, "id", a->p.id);
    return 0;
}

/* {"action":"reject_agent_ws","on":true|false}: while on, every agent
 * upgrade is refused with 403 (a key the platform no longer takes), so an
 * agent, the real SDK as well as the stand-in, cannot reconnect. */
static int act_reject_agent_ws(server *srv, const cJSON *body, cJSON *answer, char why[WHY_SZ])
{
    (void)answer;
    const cJSON *on = cJSON_GetObjectItemCaseSensitive(body, "on");
    if (!cJSON_IsBool(on)) {
        snprintf(why, WHY_SZ, "on must be true or false");
        return -1;
    }
    srv->faults.reject_agent_ws = cJSON_IsTrue(on);
    return 0;
}

static const control_action actions[] = {
    {"drop_ws", act_drop_ws},       {"refuse", act_refuse}, {"close", act_close},
    {"fail_rest", act_fail_rest},   {"delay", act_delay},   {"garbage", act_garbage},
    {"seed_agent", act_seed_agent}, {"reject_agent_ws", act_reject_agent_ws},
};

static void answer_bad(http_response *resp, const char *why)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddBoolToObject(doc, "ok", 0);
    cJSON_AddStringToObject(doc, "error", why);
    reply_json(resp, 400, doc);
}

static void control(server *srv, const http_request *req, http_response *resp)
{
    cJSON *body = req->body ? cJSON_ParseWithLength(req->body, req->body_len) : NULL;
    const cJSON *action = cJSON_GetObjectItemCaseSensitive(body, "action");
    const control_action *found = NULL;
    for (size_t i = 0; cJSON_IsString(action) && i < sizeof actions / sizeof *actions; i++)
        if (strcmp(actions[i].name, action->valuestring) == 0)
            found = &actions[i];
    char why[WHY_SZ] = "";
    cJSON *answer = cJSON_CreateObject();
    cJSON_AddBoolToObject(answer, "ok", 1);
    if (!cJSON_IsObject(body))
        snprintf(why, sizeof why, "the body must be a JSON object with an action");
    else if (!found)
        snprintf(why, sizeof why, "unknown action");
    else if (found->run(srv, body, answer, why) == 0)
        server_log(srv, "control %s", found->name);
    if (why[0]) {
        cJSON_Delete(answer);
        answer_bad(resp, why);
    } else {
        reply_json(resp, 200, answer);
    }
    cJSON_Delete(body);
}

static void stats(server *srv, http_response *resp)
{
    int agents = 0;
    int sockets = ws_count(srv, &agents);
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddNumberToObject(doc, "live_agents", store_live_agents(srv->st));
    cJSON_AddNumberToObject(doc, "live_rooms", store_live_rooms(srv->st));
    cJSON_AddNumberToObject(doc, "ws_connections", sockets);
    cJSON_AddNumberToObject(doc, "agent_connections", agents);
    cJSON_AddNumberToObject(doc, "rest_calls", (double)srv->rest_calls);
    cJSON_AddNumberToObject(doc, "upgrade_attempts", (double)srv->upgrade_attempts);
    cJSON_AddNumberToObject(doc, "heartbeat_drops", (double)srv->heartbeat_drops);
    reply_json(resp, 200, doc);
}

static void stop_serving(void *app)
{
    server *srv = app;
    srv->stopping = 1;
    lws_cancel_service(srv->ctx);
}

void control_route(server *srv, const http_request *req, http_response *resp)
{
    const char *what = req->path + strlen(CONTROL_PREFIX);
    int post = strcmp(req->method, "POST") == 0;
    if (post && strcmp(what, "control") == 0) {
        control(srv, req, resp);
    } else if (strcmp(req->method, "GET") == 0 && strcmp(what, "stats") == 0) {
        stats(srv, resp);
    } else if (post && strcmp(what, "shutdown") == 0) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddBoolToObject(doc, "ok", 1);
        reply_json(resp, 200, doc);
        resp->after = stop_serving;
    } else {
        answer_bad(resp, "no such control endpoint");
        resp->status = 404;
    }
}
