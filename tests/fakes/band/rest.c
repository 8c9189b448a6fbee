#include "rest.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fanout.h"
#include "rest_internal.h"
#include "view.h"

typedef enum rest_caller { REST_USER, REST_AGENT } rest_caller;

typedef struct rest_route_entry {
    const char *method;
    const char *pattern; /* '*' matches one path segment */
    rest_caller caller;
    void (*handler)(rest_ctx *c);
    const char *tag;
} rest_route_entry;

static const rest_route_entry routes[] = {
    {"POST", "/api/v1/me/agents/register", REST_USER, rest_me_register, NULL},
    {"GET", "/api/v1/me/agents", REST_USER, rest_me_list_agents, NULL},
    {"DELETE", "/api/v1/me/agents/*", REST_USER, rest_me_delete_agent, NULL},
    {"GET", "/api/v1/me/profile", REST_USER, rest_me_profile, NULL},
    {"GET", "/api/v1/me/chats", REST_USER, rest_list_chats, NULL},
    {"POST", "/api/v1/me/chats", REST_USER, rest_me_create_chat, NULL},
    {"DELETE", "/api/v1/me/chats/*", REST_USER, rest_me_delete_chat, NULL},
    {"GET", "/api/v1/me/chats/*/participants", REST_USER, rest_me_participants, NULL},
    {"POST", "/api/v1/me/chats/*/participants", REST_USER, rest_me_add_participant, NULL},
    {"DELETE", "/api/v1/me/chats/*/participants/*", REST_USER, rest_me_remove_participant, NULL},
    {"GET", "/api/v1/me/chats/*/messages", REST_USER, rest_me_messages, NULL},
    {"POST", "/api/v1/me/chats/*/messages", REST_USER, rest_me_send, NULL},
    {"GET", "/api/v1/agent/me", REST_AGENT, rest_agent_me, NULL},
    {"GET", "/api/v1/agent/chats", REST_AGENT, rest_list_chats, NULL},
    {"GET", "/api/v1/agent/chats/*/participants", REST_AGENT, rest_agent_participants, NULL},
    {"GET", "/api/v1/agent/chats/*/context", REST_AGENT, rest_agent_context, NULL},
    {"GET", "/api/v1/agent/chats/*/messages", REST_AGENT, rest_agent_messages, NULL},
    {"POST", "/api/v1/agent/chats/*/messages", REST_AGENT, rest_agent_send, NULL},
    {"GET", "/api/v1/agent/chats/*/messages/next", REST_AGENT, rest_agent_next, NULL},
    {"POST", "/api/v1/agent/chats/*/messages/*/processing", REST_AGENT, rest_agent_mark,
     "processing"},
    {"POST", "/api/v1/agent/chats/*/messages/*/processed", REST_AGENT, rest_agent_mark,
     "processed"},
    {"POST", "/api/v1/agent/chats/*/messages/*/failed", REST_AGENT, rest_agent_mark, "failed"},
    {"POST", "/api/v1/agent/chats/*/activity", REST_AGENT, rest_agent_activity, NULL},
    {"POST", "/api/v1/agent/chats/*/events", REST_AGENT, rest_agent_event, NULL},
};

/* Matches `path` against `pattern` segment by segment, copying what each
 * '*' matched into args. A single trailing '/' on the path is ignored. */
static int path_matches(const char *pattern, const char *path, char args[][REST_ARG_SZ])
{
    int nargs = 0;
    while (*pattern && *path) {
        if (*pattern == '*') {
            size_t n = strcspn(path, "/");
            if (n == 0 || n >= REST_ARG_SZ || nargs == REST_ARGS_MAX)
                return 0;
            memcpy(args[nargs], path, n);
            args[nargs++][n] = '\0';
            pattern++;
            path += n;
        } else if (*pattern++ != *path++) {
            return 0;
        }
    }
    if (path[0] == '/' && path[1] == '\0')
        path++;
    return *pattern == '\0' && *path == '\0';
}

static void authenticate_and_run(rest_ctx *c, const rest_route_entry *r)
{
    c->who = store_by_key(c->st, c->req->api_key);
    if (!c->who) {
        reply_error(c->resp, 401, "unauthorized", NULL, "invalid or missing API key");
        return;
    }
    int wants_agent = r->caller == REST_AGENT;
    if (wants_agent != (c->who->kind == STORE_AGENT)) {
        reply_error(c->resp, 403, "forbidden", NULL, "this endpoint needs %s API key",
                    wants_agent ? "an agent" : "a user");
        return;
    }
    c->tag = r->tag;
    r->handler(c);
}

void rest_route(server *srv, const http_request *req, http_response *resp)
{
    rest_ctx c = {
        .srv = srv, .st = srv->st, .req = req, .resp = resp, .now_ms = clock_wall_ms(NULL)};
    int path_known = 0;
    for (size_t i = 0; i < sizeof routes / sizeof *routes; i++) {
        if (!path_matches(routes[i].pattern, req->path, c.args))
            continue;
        path_known = 1;
        if (strcmp(routes[i].method, req->method) == 0) {
            authenticate_and_run(&c, &routes[i]);
            cJSON_Delete(c.body);
            return;
        }
    }
    if (path_known)
        reply_error(resp, 405, "method_not_allowed", NULL, "%s is not allowed here", req->method);
    else
        reply_error(resp, 404, "not_found", NULL, "no such endpoint");
}

/* ---- helpers shared by the handlers ------------------------------------ */

static int blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!isspace((unsigned char)s[i]))
            return 0;
    return 1;
}

const char *rest_string(const cJSON *obj, const char *name, size_t max, int *bad)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!f || cJSON_IsNull(f))
        return NULL;
    if (!cJSON_IsString(f) || strlen(f->valuestring) > max) {
        *bad = 1;
        return NULL;
    }
    return f->valuestring;
}

cJSON *rest_body(rest_ctx *c, int required)
{
    const http_request *req = c->req;
    if (req->body_too_large) {
        reply_error(c->resp, 413, "payload_too_large", NULL, "the body is over %d bytes",
                    HTTP_BODY_MAX);
        return NULL;
    }
    if (!req->body || blank(req->body, req->body_len)) {
        if (required)
            reply_error(c->resp, 422, "validation_error", "/", "a JSON body is required");
        return NULL;
    }
    c->body = cJSON_ParseWithLength(req->body, req->body_len);
    if (!c->body) {
        reply_error(c->resp, 400, "invalid_json", NULL, "the body is not valid JSON");
        return NULL;
    }
    if (!cJSON_IsObject(c->body)) {
        reply_error(c->resp, 422, "validation_error", "/", "the body must be a JSON object");
        return NULL;
    }
    return c->body;
}

const cJSON *rest_member(rest_ctx *c, const cJSON *body, const char *name)
{
    if (!body)
        return NULL; /* rest_body has answered */
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(body, name);
    if (!cJSON_IsObject(m)) {
        char pointer[64];
        snprintf(pointer, sizeof pointer, "/%s", name);
        reply_error(c->resp, 422, "validation_error", pointer, "%s must be an object", name);
        return NULL;
    }
    return m;
}

int rest_int_param(rest_ctx *c, const char *name, int fallback, int lo, int hi, int *out)
{
    const char *v = http_param_get(c->req, name);
    if (!v) {
        *out = fallback;
        return 0;
    }
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < lo || n > hi) {
        reply_error(c->resp, 422, "validation_error", name, "%s must be an integer from %d to %d",
                    name, lo, hi);
        return -1;
    }
    *out = (int)n;
    return 0;
}

store_room *rest_room(rest_ctx *c, const char *id)
{
    store_room *room = store_room_by_id(c->st, id);
    if (!room) {
        reply_error(c->resp, 404, "not_found", NULL, "no such chat room");
        return NULL;
    }
    if (!store_participant_of(room, c->who)) {
        reply_error(c->resp, 403, "forbidden", NULL, "you are not in this chat room");
        return NULL;
    }
    return room;
}

void rest_chat_error(rest_ctx *c, const chat_error *err)
{
    reply_error(c->resp, err->status, err->code, err->pointer, "%s", err->message);
}

cJSON *rest_page_metadata(int page, int page_size, int total)
{
    int total_pages = page_size > 0 ? (total + page_size - 1) / page_size : 0;
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddNumberToObject(meta, "page", page);
    cJSON_AddNumberToObject(meta, "page_size", page_size);
    cJSON_AddNumberToObject(meta, "total_count", total);
    cJSON_AddNumberToObject(meta, "total_pages", total_pages);
    cJSON_AddBoolToObject(meta, "has_more", page < total_pages);
    cJSON_AddNumberToObject(meta, "limit", page_size);
    cJSON_AddNullToObject(meta, "next_cursor");
    return meta;
}

void rest_list_participants(rest_ctx *c, const store_room *room)
{
    cJSON *items = cJSON_CreateArray();
    for (size_t i = 0; i < room->participants.len; i++)
        cJSON_AddItemToArray(items, view_participant(room->participants.items[i]));
    int n = (int)room->participants.len;
    reply_list(c->resp, items, rest_page_metadata(1, n > 0 ? n : 1, n));
}

void rest_message_sent(rest_ctx *c, store_message *m)
{
    fanout_message_created(c->srv, m);
    cJSON *data = cJSON_CreateObject();
    cJSON_AddStringToObject(data, "id", m->id);
    cJSON *recipients = cJSON_AddArrayToObject(data, "recipients");
    for (size_t i = 0; i < m->mentions.len; i++)
        cJSON_AddItemToArray(recipients, view_recipient(m->mentions.items[i]));
    cJSON_AddBoolToObject(data, "success", 1);
    reply_data(c->resp, 201, data);
}
