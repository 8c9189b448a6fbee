#include "fanout.h"

#include <stdio.h>
#include <string.h>

#include "channel.h"
#include "chat.h"
#include "clock.h"
#include "view.h"
#include "ws.h"

#define TOPIC_SZ 128

static void topic_of(char *topic, const char *prefix, const char *id)
{
    snprintf(topic, TOPIC_SZ, "%s:%s", prefix, id);
}

/* Pushes to every socket on `topic` whose principal passes `wants`. */
static void push_where(server *srv, const char *topic, const char *event, const cJSON *payload,
                       int (*wants)(const store_principal *who, const void *ud), const void *ud)
{
    for (size_t i = 0; i < srv->sockets.len; i++) {
        ws_conn *c = srv->sockets.items[i];
        if (!wants || wants(ws_principal(c), ud))
            channel_push(c, topic, event, payload);
    }
}

static int is_user(const store_principal *who, const void *ud)
{
    (void)ud;
    return who->kind == STORE_USER;
}

static int is_principal(const store_principal *who, const void *ud)
{
    return who == ud;
}

void fanout_message_created(server *srv, store_message *m)
{
    if (strcmp(m->message_type, "text") != 0)
        return;
    char topic[TOPIC_SZ];
    topic_of(topic, "chat_room", m->room->id);
    int64_t now = clock_wall_ms(NULL);
    for (size_t i = 0; i < srv->sockets.len; i++) {
        ws_conn *c = srv->sockets.items[i];
        store_agent *agent = store_as_agent(ws_principal(c));
        store_delivery *d = agent ? chat_delivery(m, agent) : NULL;
        if (agent && !d)
            continue; /* agents hear only what mentions them, never their own */
        if (!channel_joined(c, topic))
            continue;
        if (d)
            chat_mark_delivered(d, now);
        cJSON *payload = view_message(m); /* after marking: shows "delivered" */
        channel_push(c, topic, "message_created", payload);
        cJSON_Delete(payload);
    }
}

void fanout_message_updated(server *srv, const store_message *m)
{
    char topic[TOPIC_SZ];
    topic_of(topic, "chat_room", m->room->id);
    cJSON *payload = view_message(m);
    push_where(srv, topic, "message_updated", payload, is_user, NULL);
    cJSON_Delete(payload);
}

void fanout_participant_added(server *srv, const store_room *room, const store_participant *p)
{
    char topic[TOPIC_SZ];
    topic_of(topic, "room_participants", room->id);
    cJSON *payload = view_participant(p);
    push_where(srv, topic, "participant_added", payload, NULL, NULL);
    cJSON_Delete(payload);
}

void fanout_participant_removed(server *srv, const store_room *room, const store_principal *who)
{
    char topic[TOPIC_SZ];
    topic_of(topic, "room_participants", room->id);
    cJSON *payload = cJSON_CreateObject();
    cJSON_AddStringToObject(payload, "id", who->id);
    push_where(srv, topic, "participant_removed", payload, NULL, NULL);
    cJSON_Delete(payload);
}

void fanout_room_added(server *srv, const store_room *room, const store_agent *agent)
{
    char topic[TOPIC_SZ];
    topic_of(topic, "agent_rooms", agent->p.id);
    cJSON *payload = view_room(room);
    push_where(srv, topic, "room_added", payload, is_principal, &agent->p);
    cJSON_Delete(payload);
}

void fanout_room_removed(server *srv, const store_room *room, const store_agent *agent)
{
    char topic[TOPIC_SZ];
    topic_of(topic, "agent_rooms", agent->p.id);
    cJSON *payload = view_room_removed(room, clock_wall_ms(NULL));
    push_where(srv, topic, "room_removed", payload, is_principal, &agent->p);
    cJSON_Delete(payload);
}

void fanout_room_deleted(server *srv, const store_room *room)
{
    char topic[TOPIC_SZ];
    topic_of(topic, "room_participants", room->id);
    cJSON *payload = cJSON_CreateObject();
    cJSON_AddStringToObject(payload, "id", room->id);
    push_where(srv, topic, "room_deleted", payload, NULL, NULL);
    cJSON_Delete(payload);
}
