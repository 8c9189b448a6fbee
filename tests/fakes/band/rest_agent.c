/* The Agent API (protocol §4): what an agent key may do. */
#include <string.h>

#include "fanout.h"
#include "rest_internal.h"
#include "view.h"

void rest_agent_me(rest_ctx *c)
{
    reply_data(c->resp, 200, view_agent_me(rest_agent(c)));
}

void rest_agent_participants(rest_ctx *c)
{
    store_room *room = rest_room(c, c->args[0]);
    if (room)
        rest_list_participants(c, room);
}

/* What the agent said, and text that mentions it: its view of history. */
static int in_context(const store_message *m, const rest_ctx *c)
{
    if (m->sender == c->who)
        return 1;
    return strcmp(m->message_type, "text") == 0 && chat_mentions(m, c->who);
}

void rest_agent_context(rest_ctx *c)
{
    store_room *room = rest_room(c, c->args[0]);
    int limit;
    if (!room || rest_int_param(c, "limit", 100, 1, 100, &limit) != 0)
        return;
    /* The most recent `limit` messages, oldest first. */
    size_t first = room->messages.len, kept = 0;
    while (first > 0 && kept < (size_t)limit) {
        if (in_context(room->messages.items[--first], c))
            kept++;
    }
    int has_more = 0;
    for (size_t i = 0; i < first && !has_more; i++)
        has_more = in_context(room->messages.items[i], c);
    cJSON *items = cJSON_CreateArray();
    for (size_t i = first; i < room->messages.len; i++)
        if (in_context(room->messages.items[i], c))
            cJSON_AddItemToArray(items, view_message(room->messages.items[i]));
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddBoolToObject(meta, "has_more", has_more);
    cJSON_AddNumberToObject(meta, "limit", limit);
    cJSON_AddNullToObject(meta, "next_cursor");
    reply_list(c->resp, items, meta);
}

static int valid_status_filter(const char *status)
{
    static const char *const known[] = {"pending", "delivered", "processing", "processed",
                                        "failed"};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (strcmp(status, known[i]) == 0)
            return 1;
    return 0;
}

/* Messages addressed to the agent, oldest first, optionally by delivery status. */
void rest_agent_messages(rest_ctx *c)
{
    store_room *room = rest_room(c, c->args[0]);
    int page, page_size;
    if (!room || rest_int_param(c, "page", 1, 1, 100000, &page) != 0 ||
        rest_int_param(c, "page_size", 20, 1, 100, &page_size) != 0)
        return;
    const char *status = http_param_get(c->req, "status");
    if (status && !valid_status_filter(status)) {
        reply_error(c->resp, 422, "validation_error", "status",
                    "status is pending, delivered, processing, processed or failed");
        return;
    }
    cJSON *items = cJSON_CreateArray();
    int total = 0;
    for (size_t i = 0; i < room->messages.len; i++) {
        const store_message *m = room->messages.items[i];
        const store_delivery *d = chat_delivery(m, rest_agent(c));
        if (!d || (status && strcmp(chat_state_name(d->state), status) != 0))
            continue;
        if (total++ / page_size == page - 1)
            cJSON_AddItemToArray(items, view_message(m));
    }
    cJSON *meta = rest_page_metadata(page, page_size, total);
    if (status)
        cJSON_AddStringToObject(meta, "status_filter", status);
    else
        cJSON_AddNullToObject(meta, "status_filter");
    reply_list(c->resp, items, meta);
}

void rest_agent_next(rest_ctx *c)
{
    store_room *room = rest_room(c, c->args[0]);
    if (!room)
        return;
    store_message *m = chat_next_for(room, rest_agent(c));
    if (!m) {
        reply_no_content(c->resp);
        return;
    }
    chat_mark_delivered(chat_delivery(m, rest_agent(c)), c->now_ms);
    reply_data(c->resp, 200, view_message(m));
}

void rest_agent_mark(rest_ctx *c)
{
    store_room *room = rest_room(c, c->args[0]);
    if (!room)
        return;
    store_message *m = store_message_by_id(room, c->args[1]);
    store_delivery *d = m ? chat_delivery(m, rest_agent(c)) : NULL;
    if (!d) {
        reply_error(c->resp, 404, "not_found", NULL, "no message for this agent with that id");
        return;
    }
    cJSON *body = rest_body(c, 0);
    if (!body && c->resp->status)
        return; /* a body that came was unusable */
    const cJSON *error = body ? cJSON_GetObjectItemCaseSensitive(body, "error") : NULL;
    chat_error err;
    store_attempt *a;
    if (strcmp(c->tag, "processing") == 0)
        a = chat_mark_processing(d, c->now_ms, &err);
    else if (strcmp(c->tag, "processed") == 0)
        a = chat_mark_processed(d, c->now_ms, &err);
    else
        a = chat_mark_failed(d, cJSON_IsString(error) ? error->valuestring : NULL, c->now_ms, &err);
    if (!a) {
        rest_chat_error(c, &err);
        return;
    }
    fanout_message_updated(c->srv, m);
    reply_data(c->resp, 200, view_mark(m, a, c->tag));
}

void rest_agent_activity(rest_ctx *c)
{
    store_room *room = rest_room(c, c->args[0]);
    cJSON *body = room ? rest_body(c, 1) : NULL;
    if (!body)
        return;
    const cJSON *working = cJSON_GetObjectItemCaseSensitive(body, "working");
    if (!cJSON_IsBool(working)) {
        reply_error(c->resp, 422, "validation_error", "/working", "working must be true or false");
        return;
    }
    cJSON *data = cJSON_CreateObject();
    cJSON_AddBoolToObject(data, "working", cJSON_IsTrue(working));
    reply_data(c->resp, 200, data);
}

void rest_agent_event(rest_ctx *c)
{
    store_room *room = rest_room(c, c->args[0]);
    cJSON *body = room ? rest_body(c, 1) : NULL;
    if (!body)
        return;
    chat_error err;
    store_message *m = chat_post_event(
        room, rest_agent(c), cJSON_GetObjectItemCaseSensitive(body, "event"), c->now_ms, &err);
    if (!m) {
        rest_chat_error(c, &err);
        return;
    }
    cJSON *data = cJSON_CreateObject();
    cJSON_AddStringToObject(data, "id", m->id);
    cJSON_AddStringToObject(data, "message_type", m->message_type);
    cJSON_AddBoolToObject(data, "success", 1);
    reply_data(c->resp, 201, data);
}

void rest_agent_send(rest_ctx *c)
{
    store_room *room = rest_room(c, c->args[0]);
    cJSON *body = room ? rest_body(c, 1) : NULL;
    if (!body)
        return;
    chat_error err;
    store_message *m = chat_send(
        c->st, room, c->who, cJSON_GetObjectItemCaseSensitive(body, "message"), c->now_ms, &err);
    if (!m) {
        rest_chat_error(c, &err);
        return;
    }
    rest_message_sent(c, m);
}
