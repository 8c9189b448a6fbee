#include "channel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "must.h"
#include "ws_conn.h"

#define CHANNEL_TOPIC_SZ 128
#define CHANNEL_REF_SZ 64
#define CHANNEL_TOPICS_MAX 512
#define CHANNEL_HUGE_REF_SZ 2048

typedef struct channel_sub {
    char topic[CHANNEL_TOPIC_SZ];
    char join_ref[CHANNEL_REF_SZ];
} channel_sub;

/* ---- frames --------------------------------------------------------------- */

static cJSON *ref_or_null(const char *ref)
{
    return ref ? cJSON_CreateString(ref) : cJSON_CreateNull();
}

/* [join_ref, ref, topic, event, payload]; takes the payload. */
static cJSON *frame(const char *join_ref, const char *ref, const char *topic, const char *event,
                    cJSON *payload)
{
    cJSON *f = cJSON_CreateArray();
    cJSON_AddItemToArray(f, ref_or_null(join_ref));
    cJSON_AddItemToArray(f, ref_or_null(ref));
    cJSON_AddItemToArray(f, cJSON_CreateString(topic));
    cJSON_AddItemToArray(f, cJSON_CreateString(event));
    cJSON_AddItemToArray(f, payload);
    return f;
}

/* phx_reply: {"status":"ok","response":{}} or an error with a reason. */
static void reply(ws_conn *c, const char *join_ref, const char *ref, const char *topic,
                  const char *error_reason)
{
    cJSON *payload = cJSON_CreateObject();
    cJSON_AddStringToObject(payload, "status", error_reason ? "error" : "ok");
    cJSON *response = cJSON_AddObjectToObject(payload, "response");
    if (error_reason)
        cJSON_AddStringToObject(response, "reason", error_reason);
    ws_send_json(c, frame(join_ref, ref, topic, "phx_reply", payload));
}

/* ---- subscriptions -------------------------------------------------------- */

static channel_sub *find_sub(const ws_conn *c, const char *topic)
{
    for (size_t i = 0; i < c->subs.len; i++) {
        channel_sub *s = c->subs.items[i];
        if (strcmp(s->topic, topic) == 0)
            return s;
    }
    return NULL;
}

static int prefix_is(const char *topic, size_t n, const char *prefix)
{
    return strlen(prefix) == n && strncmp(topic, prefix, n) == 0;
}

/* NULL when the connection may join `topic`, else the error reason. */
static const char *authorize(const ws_conn *c, const char *topic)
{
    const char *colon = strchr(topic, ':');
    if (!colon)
        return "unmatched topic";
    size_t n = (size_t)(colon - topic);
    const char *id = colon + 1;
    const store_principal *who = c->who;
    if (prefix_is(topic, n, "agent_control") || prefix_is(topic, n, "agent_rooms") ||
        prefix_is(topic, n, "agent_contacts"))
        return who->kind == STORE_AGENT && strcmp(who->id, id) == 0 ? NULL : "unauthorized";
    if (prefix_is(topic, n, "user_rooms") || prefix_is(topic, n, "tasks"))
        return who->kind == STORE_USER && strcmp(who->id, id) == 0 ? NULL : "unauthorized";
    if (prefix_is(topic, n, "chat_room") || prefix_is(topic, n, "room_participants")) {
        store_room *room = store_room_by_id(c->srv->st, id);
        return room && store_participant_of(room, who) ? NULL : "unauthorized";
    }
    return "unmatched topic";
}

static void join(ws_conn *c, const char *join_ref, const char *ref, const char *topic)
{
    const char *why = NULL;
    if (!join_ref || strlen(join_ref) >= CHANNEL_REF_SZ || strlen(topic) >= CHANNEL_TOPIC_SZ)
        why = "invalid join";
    if (!why)
        why = authorize(c, topic);
    channel_sub *s = why ? NULL : find_sub(c, topic);
    if (!why && !s && c->subs.len >= CHANNEL_TOPICS_MAX)
        why = "too many topics";
    if (why) {
        reply(c, join_ref, ref, topic, why);
        return;
    }
    if (!s) {
        s = must_calloc(1, sizeof *s);
        snprintf(s->topic, sizeof s->topic, "%s", topic);
        vec_push(&c->subs, s);
    }
    snprintf(s->join_ref, sizeof s->join_ref, "%s", join_ref);
    reply(c, join_ref, ref, topic, NULL);
}

static void leave(ws_conn *c, const char *join_ref, const char *ref, const char *topic)
{
    channel_sub *s = find_sub(c, topic);
    if (!s) {
        reply(c, join_ref, ref, topic, "unmatched topic");
        return;
    }
    reply(c, join_ref, ref, topic, NULL);
    ws_send_json(c, frame(s->join_ref, NULL, topic, "phx_close", cJSON_CreateObject()));
    vec_remove(&c->subs, s);
    free(s);
}

/* ---- incoming ------------------------------------------------------------- */

static const char *text_of(const cJSON *item)
{
    return cJSON_IsString(item) ? item->valuestring : NULL;
}

void channel_receive(ws_conn *c, const char *text, size_t len)
{
    cJSON *msg = cJSON_ParseWithLength(text, len);
    if (!cJSON_IsArray(msg) || cJSON_GetArraySize(msg) != 5) {
        cJSON_Delete(msg);
        return;
    }
    const char *join_ref = text_of(cJSON_GetArrayItem(msg, 0));
    const char *ref = text_of(cJSON_GetArrayItem(msg, 1));
    const char *topic = text_of(cJSON_GetArrayItem(msg, 2));
    const char *event = text_of(cJSON_GetArrayItem(msg, 3));
    if (topic && event) {
        if (strcmp(topic, "phoenix") == 0 && strcmp(event, "heartbeat") == 0)
            reply(c, NULL, ref, topic, NULL);
        else if (strcmp(event, "phx_join") == 0)
            join(c, join_ref, ref, topic);
        else if (strcmp(event, "phx_leave") == 0)
            leave(c, join_ref, ref, topic);
        else
            reply(c, join_ref, ref, topic,
                  find_sub(c, topic) ? "unhandled event" : "unmatched topic");
    }
    cJSON_Delete(msg);
}

/* ---- what ws.c and fanout.c use ------------------------------------------- */

int channel_joined(const ws_conn *c, const char *topic)
{
    return find_sub(c, topic) != NULL;
}

int channel_push(ws_conn *c, const char *topic, const char *event, const cJSON *payload)
{
    channel_sub *s = find_sub(c, topic);
    if (!s || c->closing)
        return 0;
    cJSON *copy = cJSON_Duplicate(payload, 1);
    if (!copy)
        abort();
    ws_send_json(c, frame(s->join_ref, NULL, topic, event, copy));
    return 1;
}

void channel_send_garbage(ws_conn *c)
{
    ws_send_text(c, "this is not JSON {");
    ws_send_text(c, "[null,null,\"phoenix\",\"phx_reply\"]");
    for (size_t i = 0; i < c->subs.len; i++) {
        const channel_sub *s = c->subs.items[i];
        ws_send_json(c, frame(s->join_ref, NULL, s->topic, "message_created",
                              cJSON_CreateString("not an object")));
    }
    char huge_ref[CHANNEL_HUGE_REF_SZ];
    memset(huge_ref, '9', sizeof huge_ref - 1);
    huge_ref[sizeof huge_ref - 1] = '\0';
    cJSON *ok = cJSON_CreateObject();
    cJSON_AddStringToObject(ok, "status", "ok");
    cJSON_AddObjectToObject(ok, "response");
    ws_send_json(c, frame(NULL, huge_ref, "phoenix", "phx_reply", ok));
}

void channel_leave_all(ws_conn *c)
{
    for (size_t i = 0; i < c->subs.len; i++)
        free(c->subs.items[i]);
    vec_release(&c->subs);
}
