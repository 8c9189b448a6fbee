/* The Human API for agents and the user (protocol §3.1-3.3, 3.8):
 * register, list with a cursor, delete, profile. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fanout.h"
#include "rest_internal.h"
#include "view.h"
#include "ws.h"

#define AGENTS_PER_USER_MAX 1000 /* the plan quota: 403 limit_reached past it */

void rest_me_register(rest_ctx *c)
{
    const cJSON *agent = rest_member(c, rest_body(c, 1), "agent");
    if (!agent)
        return;
    int bad_name = 0, bad_description = 0;
    const char *name = rest_string(agent, "name", STORE_NAME_MAX, &bad_name);
    const char *description =
        rest_string(agent, "description", STORE_DESCRIPTION_MAX, &bad_description);
    if (!name || !*name || bad_name) {
        reply_error(c->resp, 422, "validation_error", "/agent/name",
                    "name must be a non-empty string of at most %d bytes", STORE_NAME_MAX);
        return;
    }
    if (bad_description) {
        reply_error(c->resp, 422, "validation_error", "/agent/description",
                    "description must be a string of at most %d bytes", STORE_DESCRIPTION_MAX);
        return;
    }
    if (store_agent_named(c->st, rest_user(c), name)) {
        reply_error(c->resp, 422, "validation_error", "/agent/name", "name has already been taken");
        return;
    }
    if (store_live_agents_of(c->st, rest_user(c)) >= AGENTS_PER_USER_MAX) {
        reply_error(c->resp, 403, "limit_reached", NULL, "this plan allows %d agents",
                    AGENTS_PER_USER_MAX);
        return;
    }
    store_agent *a = store_register_agent(c->st, rest_user(c), name, description, c->now_ms);
    cJSON *data = cJSON_CreateObject();
    cJSON_AddItemToObject(data, "agent", view_my_agent(a));
    cJSON *credentials = cJSON_AddObjectToObject(data, "credentials");
    cJSON_AddStringToObject(credentials, "api_key", a->p.key);
    reply_data(c->resp, 201, data);
}

/* ---- listing agents: newest first, keyset cursor ----------------------- */

static int contains_ignoring_case(const char *text, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *t = text; *t; t++) {
        size_t i = 0;
        while (i < n && t[i] && tolower((unsigned char)t[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
}

static int newest_first(const void *x, const void *y)
{
    const store_agent *a = *(store_agent *const *)x, *b = *(store_agent *const *)y;
    if (a->p.inserted_ms != b->p.inserted_ms)
        return a->p.inserted_ms < b->p.inserted_ms ? 1 : -1;
    return a->seq < b->seq ? 1 : (a->seq > b->seq ? -1 : 0);
}

/* The cursor names the last agent of the previous page: "<inserted_ms>.<seq>". */
static void cursor_of(const store_agent *a, char *out, size_t cap)
{
    snprintf(out, cap, "%" PRId64 ".%" PRIu64, a->p.inserted_ms, a->seq);
}

static int after_cursor(const store_agent *a, int64_t ms, uint64_t seq)
{
    return a->p.inserted_ms < ms || (a->p.inserted_ms == ms && a->seq < seq);
}

static cJSON *agents_metadata(int has_more, int limit, const char *next_cursor, int total)
{
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddBoolToObject(meta, "has_more", has_more);
    cJSON_AddNumberToObject(meta, "limit", limit);
    if (next_cursor)
        cJSON_AddStringToObject(meta, "next_cursor", next_cursor);
    else
        cJSON_AddNullToObject(meta, "next_cursor");
    cJSON_AddNumberToObject(meta, "total_count", total);
    cJSON *filters = cJSON_AddArrayToObject(meta, "available_filters");
    cJSON *name = cJSON_CreateObject();
    cJSON_AddStringToObject(name, "param", "name");
    cJSON_AddStringToObject(name, "label", "Name");
    cJSON_AddStringToObject(name, "type", "string");
    cJSON_AddItemToArray(filters, name);
    cJSON *sortable = cJSON_AddArrayToObject(meta, "sortable_fields");
    cJSON *inserted = cJSON_CreateObject();
    cJSON_AddStringToObject(inserted, "param", "inserted_at");
    cJSON_AddStringToObject(inserted, "label", "Created");
    cJSON_AddItemToArray(sortable, inserted);
    return meta;
}

void rest_me_list_agents(rest_ctx *c)
{
    int limit;
    if (rest_int_param(c, "limit", 20, 1, 100, &limit) != 0)
        return;
    const char *name = http_param_get(c->req, "name");
    const char *cursor = http_param_get(c->req, "cursor");
    int64_t cursor_ms = INT64_MAX;
    uint64_t cursor_seq = UINT64_MAX;
    char tail;
    if (cursor && *cursor &&
        sscanf(cursor, "%" SCNd64 ".%" SCNu64 "%c", &cursor_ms, &cursor_seq, &tail) != 2) {
        reply_error(c->resp, 422, "validation_error", "cursor", "cursor is not one of ours");
        return;
    }

    vec mine = {0};
    for (size_t i = 0; i < c->st->agents.len; i++) {
        store_agent *a = c->st->agents.items[i];
        if (!a->deleted && a->owner == rest_user(c) &&
            (!name || contains_ignoring_case(a->p.name, name)))
            vec_push(&mine, a);
    }
    if (mine.len)
        qsort(mine.items, mine.len, sizeof *mine.items, newest_first);

    cJSON *items = cJSON_CreateArray();
    int taken = 0, has_more = 0;
    char next[48] = "";
    for (size_t i = 0; i < mine.len; i++) {
        const store_agent *a = mine.items[i];
        if (!after_cursor(a, cursor_ms, cursor_seq))
            continue;
        if (taken == limit) {
            has_more = 1;
            break;
        }
        cJSON_AddItemToArray(items, view_my_agent(a));
        cursor_of(a, next, sizeof next);
        taken++;
    }
    reply_list(c->resp, items,
               agents_metadata(has_more, limit, has_more ? next : NULL, (int)mine.len));
    vec_release(&mine);
}

void rest_me_delete_agent(rest_ctx *c)
{
    store_agent *a = store_agent_by_id(c->st, c->args[0]);
    if (!a) {
        reply_error(c->resp, 404, "not_found", NULL, "no such agent");
        return;
    }
    if (a->owner != rest_user(c)) {
        reply_error(c->resp, 403, "forbidden", NULL, "this agent is not yours");
        return;
    }
    const char *force = http_param_get(c->req, "force");
    if (a->history && !(force && strcmp(force, "true") == 0)) {
        reply_error(c->resp, 422, "has_execution_history", "force",
                    "the agent has execution history; pass force=true to delete it");
        return;
    }
    for (size_t i = 0; i < c->st->rooms.len; i++) {
        store_room *room = c->st->rooms.items[i];
        if (!room->deleted && store_participant_of(room, &a->p))
            fanout_participant_removed(c->srv, room, &a->p);
    }
    int executions = store_delete_agent(c->st, a);
    ws_close_principal(c->srv, &a->p, 1008, "agent deleted");
    reply_data(c->resp, 200, view_deleted_agent(a, executions));
}

void rest_me_profile(rest_ctx *c)
{
    reply_data(c->resp, 200, view_profile(rest_user(c)));
}
