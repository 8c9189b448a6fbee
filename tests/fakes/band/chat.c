#include "chat.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "must.h"

#define CHAT_CONTENT_MAX (64 * 1024)

/* Fills err and returns NULL, so a refusal reads `return refuse(...)`. */
static void *refuse(chat_error *err, int status, const char *code, const char *pointer,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void *refuse(chat_error *err, int status, const char *code, const char *pointer,
                    const char *fmt, ...)
{
    err->status = status;
    err->code = code;
    snprintf(err->pointer, sizeof err->pointer, "%s", pointer);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return NULL;
}

static const char *string_field(const cJSON *obj, const char *name)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(f) ? f->valuestring : NULL;
}

/* A participant of the room whose display name is `name` (any case). */
static store_principal *participant_named(const store_room *room, const char *name)
{
    for (size_t i = 0; i < room->participants.len; i++) {
        store_participant *p = room->participants.items[i];
        if (strcasecmp(p->who->name, name) == 0)
            return p->who;
    }
    return NULL;
}

/* One mention item to a principal, by id first, then handle, then name. */
static store_principal *resolve_mention(store *st, const store_room *room, const cJSON *item,
                                        const char *pointer, chat_error *err)
{
    const char *id = string_field(item, "id");
    const char *handle = string_field(item, "handle");
    const char *name = string_field(item, "name");
    store_principal *who;
    if (id && *id) {
        who = store_by_id(st, id);
        if (!who)
            return refuse(err, 422, "mentioned_participant_not_in_room", pointer,
                          "no participant has id %.40s", id);
        return who;
    }
    if (handle && *handle) {
        who = store_by_handle(st, handle);
        if (!who)
            return refuse(err, 422, "handle_not_found", pointer, "no one has handle %.60s", handle);
        return who;
    }
    if (name && *name) {
        who = participant_named(room, name);
        if (!who)
            return refuse(err, 422, "handle_not_found", pointer, "no participant named %.60s",
                          name);
        return who;
    }
    return refuse(err, 422, "mention_missing_identifier", pointer,
                  "a mention needs an id, a handle or a name");
}

/* One mention item, checked against the sender, the room and the items
 * before it; *is_reference tells a "reference" from a "mention". */
static store_principal *check_mention(store *st, const store_room *room,
                                      const store_principal *sender, const cJSON *item, int index,
                                      const vec *taken, int *is_reference, chat_error *err)
{
    char pointer[64];
    snprintf(pointer, sizeof pointer, "/message/mentions/%d", index);
    if (!cJSON_IsObject(item))
        return refuse(err, 422, "validation_error", pointer, "a mention must be an object");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(item, "kind");
    const char *k = cJSON_IsString(kind) ? kind->valuestring : NULL;
    int known = k && (strcmp(k, "mention") == 0 || strcmp(k, "reference") == 0);
    if (kind && !cJSON_IsNull(kind) && !known)
        return refuse(err, 422, "invalid_mention_kind", pointer,
                      "kind must be mention or reference");
    *is_reference = k && strcmp(k, "reference") == 0;
    store_principal *who = resolve_mention(st, room, item, pointer, err);
    if (!who)
        return NULL;
    if (who == sender)
        return refuse(err, 422, "cannot_mention_self", pointer, "you cannot mention yourself");
    if (!store_participant_of(room, who))
        return refuse(err, 422, "mentioned_participant_not_in_room", pointer,
                      "%.60s is not in this room", who->handle);
    for (size_t i = 0; i < taken->len; i++)
        if (taken->items[i] == who)
            return refuse(err, 422, "duplicate_mentions", pointer, "%.60s is mentioned twice",
                          who->handle);
    return who;
}

/* Fills `mentions` with the mention-kind items; references are checked,
 * then left out. 0, or -1 with err set. */
static int take_mentions(store *st, const store_room *room, const store_principal *sender,
                         const cJSON *message, vec *mentions, chat_error *err)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(message, "mentions");
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0) {
        refuse(err, 422, "mentions_required", "/message/mentions",
               "a message must mention at least one participant");
        return -1;
    }
    vec seen = {0}; /* both kinds: a duplicate is a duplicate either way */
    int index = 0, is_reference = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, list)
    {
        store_principal *who =
            check_mention(st, room, sender, item, index++, &seen, &is_reference, err);
        if (!who)
            break;
        vec_push(&seen, who);
        if (!is_reference)
            vec_push(mentions, who);
    }
    vec_release(&seen);
    if (item)
        return -1; /* stopped early: err is set */
    if (mentions->len == 0) {
        refuse(err, 422, "mentions_required", "/message/mentions",
               "only references were given; mention at least one participant");
        return -1;
    }
    return 0;
}

static store_message *new_message(store_room *room, store_principal *sender, const char *content,
                                  const char *type, int64_t now_ms)
{
    store_message *m = must_calloc(1, sizeof *m);
    ident_uuid(m->id);
    m->room = room;
    m->sender = sender;
    m->content = must_strdup(content);
    snprintf(m->message_type, sizeof m->message_type, "%s", type);
    m->inserted_ms = m->updated_ms = now_ms;
    return m;
}

store_message *chat_send(store *st, store_room *room, store_principal *sender, const cJSON *message,
                         int64_t now_ms, chat_error *err)
{
    if (!cJSON_IsObject(message))
        return refuse(err, 422, "validation_error", "/message", "message must be an object");
    const char *content = string_field(message, "content");
    if (!content || !*content || strlen(content) > CHAT_CONTENT_MAX)
        return refuse(err, 422, "validation_error", "/message/content",
                      "content must be a non-empty string of at most %d bytes", CHAT_CONTENT_MAX);
    if (!store_participant_of(room, sender))
        return refuse(err, 403, "forbidden", "", "the sender is not in this room");
    vec mentions = {0};
    if (take_mentions(st, room, sender, message, &mentions, err) != 0) {
        vec_release(&mentions);
        return NULL;
    }

    store_message *m = new_message(room, sender, content, "text", now_ms);
    m->mentions = mentions;
    for (size_t i = 0; i < mentions.len; i++) {
        store_agent *agent = store_as_agent(mentions.items[i]);
        if (!agent)
            continue;
        store_delivery *d = must_calloc(1, sizeof *d);
        d->agent = agent;
        d->message = m;
        vec_push(&m->deliveries, d);
    }
    vec_push(&room->messages, m);
    room->last_message_ms = room->updated_ms = now_ms;
    store_agent *author = store_as_agent(sender);
    if (author)
        author->history++;
    return m;
}

static int is_event_type(const char *type)
{
    static const char *const types[] = {"tool_call", "tool_result", "thought", "error", "task"};
    for (size_t i = 0; type && i < sizeof types / sizeof *types; i++)
        if (strcmp(type, types[i]) == 0)
            return 1;
    return 0;
}

store_message *chat_post_event(store_room *room, store_agent *agent, const cJSON *event,
                               int64_t now_ms, chat_error *err)
{
    if (!cJSON_IsObject(event))
        return refuse(err, 422, "validation_error", "/event", "event must be an object");
    const char *content = string_field(event, "content");
    if (!content || strlen(content) > CHAT_CONTENT_MAX)
        return refuse(err, 422, "validation_error", "/event/content", "content must be a string");
    const char *type = string_field(event, "message_type");
    if (!is_event_type(type))
        return refuse(err, 422, "validation_error", "/event/message_type",
                      "message_type must be tool_call, tool_result, thought, error or task");
    const cJSON *metadata = cJSON_GetObjectItemCaseSensitive(event, "metadata");
    if (metadata && !cJSON_IsNull(metadata) && !cJSON_IsObject(metadata))
        return refuse(err, 422, "validation_error", "/event/metadata",
                      "metadata must be an object");
    if (!store_participant_of(room, &agent->p))
        return refuse(err, 403, "forbidden", "", "the agent is not in this room");

    store_message *m = new_message(room, &agent->p, content, type, now_ms);
    if (cJSON_IsObject(metadata)) {
        m->metadata_json = cJSON_PrintUnformatted(metadata);
        if (!m->metadata_json)
            abort();
    }
    vec_push(&room->messages, m);
    agent->history++;
    return m;
}

store_delivery *chat_delivery(const store_message *m, const store_agent *agent)
{
    for (size_t i = 0; i < m->deliveries.len; i++) {
        store_delivery *d = m->deliveries.items[i];
        if (d->agent == agent)
            return d;
    }
    return NULL;
}

int chat_mentions(const store_message *m, const store_principal *who)
{
    for (size_t i = 0; i < m->mentions.len; i++)
        if (m->mentions.items[i] == who)
            return 1;
    return 0;
}

void chat_mark_delivered(store_delivery *d, int64_t now_ms)
{
    if (d->state == STORE_PENDING)
        d->state = STORE_DELIVERED;
    if (!d->delivered_ms)
        d->delivered_ms = now_ms;
}

static store_attempt *open_attempt(const store_delivery *d)
{
    if (d->attempts.len == 0)
        return NULL;
    store_attempt *last = d->attempts.items[d->attempts.len - 1];
    return strcmp(last->status, "processing") == 0 ? last : NULL;
}

/* The message's updated_at moves with its delivery: observers merge by it. */
static void touch(store_delivery *d, int64_t now_ms)
{
    d->message->updated_ms = now_ms;
}

store_attempt *chat_mark_processing(store_delivery *d, int64_t now_ms, chat_error *err)
{
    if (d->state == STORE_PROCESSED)
        return refuse(err, 422, "already_processed", "", "this message was already processed");
    store_attempt *abandoned = open_attempt(d);
    if (abandoned) {
        abandoned->status = "failed";
        abandoned->error = must_strdup("abandoned: a new attempt started");
    }
    store_attempt *a = must_calloc(1, sizeof *a);
    a->number = (int)d->attempts.len + 1;
    a->status = "processing";
    vec_push(&d->attempts, a);
    chat_mark_delivered(d, now_ms);
    d->state = STORE_PROCESSING;
    d->agent->history++;
    touch(d, now_ms);
    return a;
}

store_attempt *chat_mark_processed(store_delivery *d, int64_t now_ms, chat_error *err)
{
    store_attempt *a = open_attempt(d);
    if (!a)
        return refuse(err, 422, "no_open_attempt", "", "no processing attempt is open");
    a->status = "success";
    d->state = STORE_PROCESSED;
    d->processed_ms = now_ms;
    touch(d, now_ms);
    return a;
}

store_attempt *chat_mark_failed(store_delivery *d, const char *error, int64_t now_ms,
                                chat_error *err)
{
    store_attempt *a = open_attempt(d);
    if (!a)
        return refuse(err, 422, "no_open_attempt", "", "no processing attempt is open");
    a->status = "failed";
    a->error = must_strdup(error && *error ? error : "failed");
    d->state = STORE_FAILED;
    touch(d, now_ms);
    return a;
}

store_message *chat_next_for(const store_room *room, const store_agent *agent)
{
    for (size_t i = 0; i < room->messages.len; i++) {
        store_message *m = room->messages.items[i];
        store_delivery *d = chat_delivery(m, agent);
        if (d && d->state != STORE_PROCESSED)
            return m;
    }
    return NULL;
}

const char *chat_state_name(store_delivery_state state)
{
    switch (state) {
    case STORE_PENDING: return "pending";
    case STORE_DELIVERED: return "delivered";
    case STORE_PROCESSING: return "processing";
    case STORE_PROCESSED: return "processed";
    case STORE_FAILED: return "failed";
    }
    return "pending";
}
