#include "presence.h"

#include <string.h>

#include "clock.h"
#include "link.h"
#include "resync.h"
#include "sdklog.h"

#define IDLE_POLL_MS 60000

void presence_init(presence *p, phx_client *phx, band_client *rest, handler *h,
                   const volatile sig_atomic_t *stop)
{
    rooms_init(&p->served);
    p->phx = phx;
    p->rest = rest;
    p->handler = h;
    p->stop = stop;
}

void presence_free(presence *p)
{
    rooms_free(&p->served);
}

static void schedule_poll(room *r)
{
    r->next_poll_ms = clock_mono_ms() + IDLE_POLL_MS;
}

/* Catches one room up; a failure is logged, the room stays served. */
static void catch_up(presence *p, room *r)
{
    char err[ERR_BUFSZ];
    if (resync_room(p->handler, r->id, p->stop, err) == ERR_OK)
        sdklog_info(SDKLOG_EXECUTION, "ExecutionContext %s: Synchronized, switching to "
                    "WebSocket", r->id);
    else if (!*p->stop)
        sdklog_warning(SDKLOG_EXECUTION, "ExecutionContext %s: synchronization failed: %s",
                       r->id, err);
    schedule_poll(r);
}

static int join(presence *p, const char *room_id)
{
    char err[ERR_BUFSZ];
    if (rooms_join(&p->served, p->phx, room_id, err) == ERR_OK)
        return 0;
    sdklog_error(SDKLOG_PRESENCE, "Failed to join room %s: %s", room_id, err);
    return -1;
}

err_code presence_start(presence *p, char *err)
{
    rooms listed;
    err_code rc = rooms_fetch(p->rest, &listed, err);
    if (rc != ERR_OK)
        return rc;
    for (size_t i = 0; i < listed.count && !*p->stop; i++)
        (void)join(p, listed.items[i].id); /* logged; the others still count */
    rooms_free(&listed);
    sdklog_info(SDKLOG_PRESENCE, "Subscribed to %zu rooms during startup", p->served.count);
    for (size_t i = 0; i < p->served.count && !*p->stop; i++)
        catch_up(p, &p->served.items[i]);
    return ERR_OK;
}

void presence_enter(presence *p, const char *room_id)
{
    if (!rooms_find(&p->served, room_id) && join(p, room_id) == 0)
        catch_up(p, rooms_find(&p->served, room_id));
}

void presence_leave(presence *p, const char *room_id)
{
    char err[ERR_BUFSZ], id[BAND_ID_SZ];
    if (!rooms_find(&p->served, room_id))
        return;
    snprintf(id, sizeof id, "%s", room_id); /* room_id may point into the set */
    if (rooms_leave(&p->served, p->phx, id, err) != ERR_OK)
        sdklog_warning(SDKLOG_PRESENCE, "Leaving room %s: %s", id, err);
    sdklog_info(SDKLOG_PRESENCE, "Agent left room: %s", id);
}

static int starts_with(const char *text, const char *prefix)
{
    return strncmp(text, prefix, strlen(prefix)) == 0;
}

int presence_on_push(presence *p, const char *topic, const char *event, const cJSON *payload)
{
    room *r = rooms_find_topic(&p->served, topic);
    if (!r)
        return 0;
    if (strcmp(event, "message_created") == 0 && starts_with(topic, "chat_room:")) {
        (void)handler_handle_push(p->handler, r->id, payload); /* outcomes are logged */
        schedule_poll(r);
    } else if (strcmp(event, "room_deleted") == 0) {
        presence_leave(p, r->id);
    }
    return 1;
}

int presence_drop_topic(presence *p, const char *topic)
{
    room *r = rooms_find_topic(&p->served, topic);
    if (!r)
        return 0;
    presence_leave(p, r->id);
    return 1;
}

void presence_log_rejoined(const presence *p)
{
    for (size_t i = 0; i < p->served.count; i++) {
        char messages[LINK_TOPIC_SZ], members[LINK_TOPIC_SZ];
        link_topic(messages, "chat_room", p->served.items[i].id);
        link_topic(members, "room_participants", p->served.items[i].id);
        if (phx_is_joined(p->phx, messages))
            sdklog_info(SDKLOG_PHOENIX, "Successfully subscribed to topic %s", messages);
        if (phx_is_joined(p->phx, members))
            sdklog_info(SDKLOG_PHOENIX, "Successfully subscribed to topic %s", members);
    }
}

/* Leaves the rooms Band no longer lists, then joins and catches up the
 * new ones, which rooms_join appends: the rooms served before the
 * reconnect stay first. Returns how many rooms are new. */
static size_t reconcile(presence *p)
{
    rooms listed;
    char err[ERR_BUFSZ];
    if (rooms_fetch(p->rest, &listed, err) != ERR_OK) {
        sdklog_warning(SDKLOG_PRESENCE, "Could not sync rooms from API: %s", err);
        return 0;
    }
    for (size_t i = p->served.count; i-- > 0;)
        if (!rooms_find(&listed, p->served.items[i].id))
            presence_leave(p, p->served.items[i].id);
    size_t before = p->served.count;
    for (size_t i = 0; i < listed.count && !*p->stop; i++)
        presence_enter(p, listed.items[i].id);
    rooms_free(&listed);
    return p->served.count - before;
}

void presence_reconnected(presence *p)
{
    size_t kept = p->served.count - reconcile(p);
    for (size_t i = 0; i < kept; i++)
        sdklog_info(SDKLOG_EXECUTION, "ExecutionContext %s: Reconnected, scheduling "
                    "synchronization", p->served.items[i].id);
    sdklog_info(SDKLOG_RUNTIME, "AgentRuntime: Requesting /next resync for %zu execution(s) "
                "after reconnect", kept);
    for (size_t i = 0; i < kept && !*p->stop; i++)
        catch_up(p, &p->served.items[i]);
}

void presence_poll_idle(presence *p)
{
    int64_t now = clock_mono_ms();
    for (size_t i = 0; i < p->served.count && !*p->stop; i++) {
        room *r = &p->served.items[i];
        if (now < r->next_poll_ms)
            continue;
        char err[ERR_BUFSZ];
        if (resync_next(p->handler, r->id, p->stop, err) != ERR_OK && !*p->stop)
            sdklog_warning(SDKLOG_EXECUTION, "ExecutionContext %s: idle poll failed: %s",
                           r->id, err);
        schedule_poll(r);
    }
}
