/* presence: the rooms the agent is in, kept in step with Band.
 *
 * The SDK's band.runtime.presence and its per-room execution contexts,
 * reduced to what the smoke needs: at startup join every room Band lists
 * and catch each up over REST; join rooms that arrive later (room_added);
 * leave rooms that go (room_removed, room_deleted, a refused rejoin);
 * after a reconnect ask Band again which rooms are ours (leave the
 * vanished, join the new) and catch every room up, since pushes sent
 * while the socket was down are gone; poll a room that has been idle for
 * 60 s. Messages pushed on a room's topic go to the handler.
 *
 * Lines it writes (band-protocol.md 8.3), besides those of rooms.h:
 *   INFO band.runtime.presence: Subscribed to <n> rooms during startup
 *   INFO band.runtime.execution: ExecutionContext <room>: Synchronized, switching to WebSocket
 *   INFO band.runtime.execution: ExecutionContext <room>: Reconnected, scheduling synchronization
 *   INFO band.runtime.runtime: AgentRuntime: Requesting /next resync for <n> execution(s) after reconnect
 *   INFO band.runtime.presence: Agent left room: <room>
 *
 * Lifetime: presence owns its room set; the phoenix client, the REST
 * client, the handler and the stop flag are borrowed and must outlive it.
 * Every call may block on REST and joins; none may run inside a phoenix
 * callback.
 */
#ifndef FAKE_AGENT_PRESENCE_H
#define FAKE_AGENT_PRESENCE_H

#include <signal.h>

#include <cJSON.h>

#include "band_rest.h"
#include "err.h"
#include "handler.h"
#include "phoenix.h"
#include "rooms.h"

typedef struct presence {
    rooms served;                      /* owned */
    phx_client *phx;                   /* borrowed */
    band_client *rest;                 /* borrowed */
    handler *handler;                  /* borrowed */
    const volatile sig_atomic_t *stop; /* borrowed: main's signal flag */
} presence;

void presence_init(presence *p, phx_client *phx, band_client *rest, handler *h,
                   const volatile sig_atomic_t *stop);

/* Forgets the rooms (no leave is sent). Safe on a zeroed presence. */
void presence_free(presence *p);

/* Startup: every room Band lists is joined, then caught up. A room that
 * cannot be joined or caught up is logged and skipped; only the listing
 * itself fails the call (errors as band_agent_chats). */
err_code presence_start(presence *p, char *err);

/* Joins and catches up a room (room_added); a no-op when it is served. */
void presence_enter(presence *p, const char *room_id);

/* Leaves and forgets a room; a no-op when it is not served. */
void presence_leave(presence *p, const char *room_id);

/* A push on a room topic: message_created goes to the handler,
 * room_deleted leaves the room. Returns 0 when `topic` is no topic of a
 * served room (the push is not ours), 1 otherwise. */
int presence_on_push(presence *p, const char *topic, const char *event, const cJSON *payload);

/* A rejoin Band refused: when `topic` belongs to a served room, the room
 * is left (a later reconcile rejoins it if Band still lists it) and 1 is
 * returned; 0 when the topic is no room's. */
int presence_drop_topic(presence *p, const char *topic);

/* After PHX_RECONNECTED: the rooms' "Successfully subscribed" lines. */
void presence_log_rejoined(const presence *p);

/* After PHX_RECONNECTED: reconcile with GET /agent/chats, then catch
 * every room up. */
void presence_reconnected(presence *p);

/* Polls /messages/next in every room idle for 60 s. */
void presence_poll_idle(presence *p);

#endif
