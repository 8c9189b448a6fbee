#include "view.h"

#include <stdlib.h>

#include "chat.h"
#include "clock.h"

static void add_time(cJSON *obj, const char *name, int64_t ms)
{
    char buf[CLOCK_ISO_SZ];
    if (ms)
        cJSON_AddStringToObject(obj, name, clock_format_iso(ms, buf));
    else
        cJSON_AddNullToObject(obj, name);
}

static void add_string_or_null(cJSON *obj, const char *name, const char *value)
{
    if (value)
        cJSON_AddStringToObject(obj, name, value);
    else
        cJSON_AddNullToObject(obj, name);
}

static const char *type_name(const store_principal *p)
{
    return p->kind == STORE_AGENT ? "Agent" : "User";
}

cJSON *view_my_agent(const store_agent *a)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", a->p.id);
    cJSON_AddStringToObject(o, "name", a->p.name);
    add_string_or_null(o, "description", a->description);
    cJSON_AddStringToObject(o, "handle", a->p.handle);
    cJSON_AddStringToObject(o, "owner_id", a->owner->p.id);
    cJSON_AddBoolToObject(o, "is_external", 1);
    cJSON_AddBoolToObject(o, "listed_in_directory", 0);
    cJSON_AddItemToObject(o, "tags", cJSON_CreateArray());
    add_time(o, "inserted_at", a->p.inserted_ms);
    add_time(o, "updated_at", a->p.updated_ms);
    return o;
}

cJSON *view_deleted_agent(const store_agent *a, int executions_deleted)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", a->p.id);
    cJSON_AddStringToObject(o, "name", a->p.name);
    add_string_or_null(o, "description", a->description);
    cJSON_AddNumberToObject(o, "executions_deleted", executions_deleted);
    return o;
}

cJSON *view_agent_me(const store_agent *a)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", a->p.id);
    cJSON_AddStringToObject(o, "name", a->p.name);
    add_string_or_null(o, "description", a->description);
    cJSON_AddStringToObject(o, "handle", a->p.handle);
    cJSON_AddStringToObject(o, "owner_uuid", a->owner->p.id);
    cJSON_AddItemToObject(o, "tags", cJSON_CreateArray());
    cJSON_AddBoolToObject(o, "listed_in_directory", 0);
    cJSON_AddItemToObject(o, "feature_flags", cJSON_CreateObject());
    add_time(o, "inserted_at", a->p.inserted_ms);
    add_time(o, "updated_at", a->p.updated_ms);
    return o;
}

cJSON *view_profile(const store_user *u)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", u->p.id);
    cJSON_AddStringToObject(o, "email", u->email);
    cJSON_AddStringToObject(o, "handle", u->p.handle);
    cJSON_AddStringToObject(o, "name", u->p.name);
    cJSON_AddStringToObject(o, "role", "user");
    add_time(o, "inserted_at", u->p.inserted_ms);
    add_time(o, "updated_at", u->p.updated_ms);
    return o;
}

cJSON *view_room(const store_room *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    add_string_or_null(o, "title", r->title);
    cJSON_AddNullToObject(o, "task_id");
    cJSON_AddStringToObject(o, "status", "active");
    cJSON_AddStringToObject(o, "type", "group");
    add_time(o, "inserted_at", r->inserted_ms);
    add_time(o, "updated_at", r->updated_ms);
    add_time(o, "last_message_at", r->last_message_ms);
    return o;
}

cJSON *view_room_removed(const store_room *r, int64_t removed_ms)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "status", "active");
    cJSON_AddStringToObject(o, "type", "group");
    add_string_or_null(o, "title", r->title);
    add_time(o, "removed_at", removed_ms);
    return o;
}

cJSON *view_participant(const store_participant *p)
{
    const store_agent *agent = store_as_agent(p->who);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", p->who->id);
    cJSON_AddStringToObject(o, "name", p->who->name);
    cJSON_AddStringToObject(o, "type", type_name(p->who));
    cJSON_AddStringToObject(o, "handle", p->who->handle);
    cJSON_AddStringToObject(o, "role", p->role);
    cJSON_AddStringToObject(o, "status", "active");
    add_string_or_null(o, "description", agent ? agent->description : NULL);
    cJSON_AddBoolToObject(o, "is_external", agent != NULL);
    return o;
}

cJSON *view_recipient(const store_principal *who)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", who->id);
    cJSON_AddStringToObject(o, "handle", who->handle);
    cJSON_AddStringToObject(o, "name", who->name);
    if (who->kind == STORE_USER)
        cJSON_AddStringToObject(o, "username", who->handle);
    return o;
}

static cJSON *view_attempts(const store_delivery *d)
{
    cJSON *list = cJSON_CreateArray();
    for (size_t i = 0; i < d->attempts.len; i++) {
        const store_attempt *a = d->attempts.items[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "attempt_number", a->number);
        cJSON_AddStringToObject(o, "status", a->status);
        if (a->error)
            cJSON_AddStringToObject(o, "error", a->error);
        cJSON_AddItemToArray(list, o);
    }
    return list;
}

/* Only deliveries that reached the agent are shown: "pending" is not one of
 * the statuses observers know (protocol §7). */
static cJSON *view_delivery_status(const store_message *m)
{
    cJSON *map = cJSON_CreateObject();
    for (size_t i = 0; i < m->deliveries.len; i++) {
        const store_delivery *d = m->deliveries.items[i];
        if (d->state == STORE_PENDING)
            continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "status", chat_state_name(d->state));
        if (d->attempts.len)
            cJSON_AddNumberToObject(o, "current_attempt", (double)d->attempts.len);
        if (d->delivered_ms)
            add_time(o, "delivered_at", d->delivered_ms);
        if (d->processed_ms)
            add_time(o, "processed_at", d->processed_ms);
        cJSON_AddItemToObject(o, "attempts", view_attempts(d));
        cJSON_AddItemToObject(map, d->agent->p.id, o);
    }
    return map;
}

static cJSON *view_metadata(const store_message *m)
{
    cJSON *meta = m->metadata_json ? cJSON_Parse(m->metadata_json) : NULL;
    if (!meta)
        meta = cJSON_CreateObject();
    cJSON *mentions = cJSON_CreateArray();
    for (size_t i = 0; i < m->mentions.len; i++)
        cJSON_AddItemToArray(mentions, view_recipient(m->mentions.items[i]));
    cJSON_AddItemToObject(meta, "mentions", mentions);
    cJSON_AddStringToObject(meta, "status", "sent");
    if (m->deliveries.len)
        cJSON_AddItemToObject(meta, "delivery_status", view_delivery_status(m));
    return meta;
}

cJSON *view_message(const store_message *m)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", m->id);
    cJSON_AddStringToObject(o, "content", m->content);
    cJSON_AddStringToObject(o, "message_type", m->message_type);
    cJSON_AddStringToObject(o, "sender_id", m->sender->id);
    cJSON_AddStringToObject(o, "sender_type", type_name(m->sender));
    cJSON_AddStringToObject(o, "sender_name", m->sender->name);
    cJSON_AddStringToObject(o, "chat_room_id", m->room->id);
    cJSON_AddNullToObject(o, "thread_id");
    add_time(o, "inserted_at", m->inserted_ms);
    add_time(o, "updated_at", m->updated_ms);
    cJSON_AddItemToObject(o, "metadata", view_metadata(m));
    return o;
}

cJSON *view_mark(const store_message *m, const store_attempt *a, const char *status)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", m->id);
    cJSON_AddNumberToObject(o, "attempt_number", a->number);
    cJSON_AddStringToObject(o, "status", status);
    cJSON_AddBoolToObject(o, "success", 1);
    return o;
}
