/* The Human API for chat rooms (protocol §3.4-3.8): rooms, participants,
 * messages. */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "fanout.h"
#include "rest_internal.h"
#include "view.h"

#define ROOM_TITLE_MAX 255

/* ---- rooms ------------------------------------------------------------- */

/* The caller's rooms, paged: the same answer for a user (GET /me/chats)
 * and an agent (GET /agent/chats); membership is what counts. */
void rest_list_chats(rest_ctx *c)
{
    int page, page_size;
    if (rest_int_param(c, "page", 1, 1, 100000, &page) != 0 ||
        rest_int_param(c, "page_size", 20, 1, 100, &page_size) != 0)
        return;
    cJSON *items = cJSON_CreateArray();
    int total = 0;
    for (size_t i = 0; i < c->st->rooms.len; i++) {
        store_room *room = c->st->rooms.items[i];
        if (room->deleted || !store_participant_of(room, c->who))
            continue;
        if (total++ / page_size == page - 1)
            cJSON_AddItemToArray(items, view_room(room));
    }
    reply_list(c->resp, items, rest_page_metadata(page, page_size, total));
}

void rest_me_create_chat(rest_ctx *c)
{
    const cJSON *chat = rest_member(c, rest_body(c, 1), "chat");
    if (!chat)
        return;
    int bad = 0;
    const char *title = rest_string(chat, "title", ROOM_TITLE_MAX, &bad);
    if (bad) {
        reply_error(c->resp, 422, "validation_error", "/chat/title",
                    "title must be a string of at most %d bytes", ROOM_TITLE_MAX);
        return;
    }
    store_room *room =
        store_create_room(c->st, rest_user(c), title && *title ? title : NULL, c->now_ms);
    reply_data(c->resp, 201, view_room(room));
}

void rest_me_delete_chat(rest_ctx *c)
{
    store_room *room = rest_room(c, c->args[0]);
    if (!room)
        return;
    if (room->owner != rest_user(c)) {
        reply_error(c->resp, 403, "forbidden", NULL, "only the owner may delete this chat room");
        return;
    }
    fanout_room_deleted(c->srv, room);
    store_delete_room(room, c->now_ms);
    cJSON *data = cJSON_CreateObject();
    cJSON_AddStringToObject(data, "id", room->id);
    reply_data(c->resp, 200, data);
}

void rest_me_participants(rest_ctx *c)
{
    store_room *room = rest_room(c, c->args[0]);
    if (room)
        rest_list_participants(c, room);
}

/* The store keeps roles as these literals, never as request text. */
static const char *known_role(const char *role)
{
    static const char *const roles[] = {"owner", "admin", "member"};
    for (size_t i = 0; i < sizeof roles / sizeof *roles; i++)
        if (strcmp(role, roles[i]) == 0)
            return roles[i];
    return NULL;
}

void rest_me_add_participant(rest_ctx *c)
{
    store_room *room = rest_room(c, c->args[0]);
    if (!room)
        return;
    const cJSON *body = rest_member(c, rest_body(c, 1), "participant");
    if (!body)
        return;
    int bad = 0;
    const char *id = rest_string(body, "participant_id", IDENT_UUID_SZ, &bad);
    const char *asked = rest_string(body, "role", 16, &bad);
    const char *role = asked ? known_role(asked) : "member";
    if (bad || !id || !role) {
        reply_error(c->resp, 422, "validation_error", "/participant",
                    "participant_id is required; role is owner, admin or member");
        return;
    }
    store_principal *who = store_by_id(c->st, id);
    if (!who) {
        reply_error(c->resp, 404, "not_found", NULL, "no such user or agent");
        return;
    }
    store_agent *agent = store_as_agent(who);
    if (agent && agent->owner != rest_user(c)) {
        reply_error(c->resp, 403, "forbidden", NULL, "this agent is not yours");
        return;
    }
    if (store_participant_of(room, who)) {
        reply_error(c->resp, 422, "validation_error", "/participant/participant_id",
                    "already a participant of this chat room");
        return;
    }
    store_participant *p = store_add_participant(room, who, role, c->now_ms);
    fanout_participant_added(c->srv, room, p);
    if (agent)
        fanout_room_added(c->srv, room, agent);
    reply_data(c->resp, 201, view_participant(p));
}

void rest_me_remove_participant(rest_ctx *c)
{
    store_room *room = rest_room(c, c->args[0]);
    if (!room)
        return;
    store_principal *who = store_by_id(c->st, c->args[1]);
    if (!who || !store_participant_of(room, who)) {
        reply_error(c->resp, 404, "not_found", NULL, "no such participant in this chat room");
        return;
    }
    if (who == &room->owner->p) {
        reply_error(c->resp, 422, "validation_error", "participant_id",
                    "the owner cannot leave their own chat room");
        return;
    }
    store_remove_participant(room, who);
    fanout_participant_removed(c->srv, room, who);
    if (store_as_agent(who))
        fanout_room_removed(c->srv, room, store_as_agent(who));
    cJSON *data = cJSON_CreateObject();
    cJSON_AddStringToObject(data, "id", who->id);
    reply_data(c->resp, 200, data);
}

/* ---- messages ---------------------------------------------------------- */

/* `since` is compared as text: the fake's timestamps are all one
 * fixed-width ISO-8601 form, so text order is time order. */
static int listed(const store_message *m, const char *type, const char *since)
{
    char at[CLOCK_ISO_SZ];
    if (type && *type && strcmp(m->message_type, type) != 0)
        return 0;
    return !since || !*since || strcmp(clock_format_iso(m->inserted_ms, at), since) > 0;
}

void rest_me_messages(rest_ctx *c)
{
    store_room *room = rest_room(c, c->args[0]);
    int limit;
    if (!room || rest_int_param(c, "limit", 50, 1, 100, &limit) != 0)
        return;
    const char *type = http_param_get(c->req, "message_type");
    const char *since = http_param_get(c->req, "since");
    const char *cursor = http_param_get(c->req, "cursor");
    int skipping = cursor && *cursor; /* newest first, resuming after the cursor's message */
    cJSON *items = cJSON_CreateArray();
    int taken = 0, has_more = 0;
    const char *last = NULL;
    for (size_t i = room->messages.len; i-- > 0;) {
        const store_message *m = room->messages.items[i];
        if (skipping) {
            skipping = strcmp(m->id, cursor) != 0;
            continue;
        }
        if (!listed(m, type, since))
            continue;
        if (taken == limit) {
            has_more = 1;
            break;
        }
        cJSON_AddItemToArray(items, view_message(m));
        last = m->id;
        taken++;
    }
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddBoolToObject(meta, "has_more", has_more);
    cJSON_AddNumberToObject(meta, "limit", limit);
    if (has_more)
        cJSON_AddStringToObject(meta, "next_cursor", last);
    else
        cJSON_AddNullToObject(meta, "next_cursor");
    reply_list(c->resp, items, meta);
}

void rest_me_send(rest_ctx *c)
{
    store_room *room = rest_room(c, c->args[0]);
    if (!room)
        return;
    cJSON *body = rest_body(c, 1);
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
