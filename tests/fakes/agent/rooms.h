/* rooms: the chat rooms the agent serves, and their two topics each.
 *
 * A room is served once both chat_room:<id> (its messages) and
 * room_participants:<id> (its membership, room_deleted) are joined, in
 * that order (band-protocol.md 6.1); then the SDK logs
 *   INFO band.runtime.presence: Agent joined room: <id>
 * Each room also carries the time of its next idle /messages/next poll
 * (6.1 step 8), which the runtime moves.
 *
 * The set owns its array; ids are copied. Rooms are few (one in the
 * smoke), so lookups are linear.
 */
#ifndef FAKE_AGENT_ROOMS_H
#define FAKE_AGENT_ROOMS_H

#include <stddef.h>
#include <stdint.h>

#include "band_rest.h"
#include "err.h"
#include "phoenix.h"

typedef struct room {
    char id[BAND_ID_SZ];
    int64_t next_poll_ms; /* clock_mono_ms() when the idle poll is due */
} room;

typedef struct rooms {
    room *items; /* owned */
    size_t count, cap;
} rooms;

void rooms_init(rooms *s);
void rooms_free(rooms *s);

/* The room with this id, or NULL. Valid until the set changes. */
room *rooms_find(rooms *s, const char *id);

/* The room whose chat_room: or room_participants: topic this is, or NULL. */
room *rooms_find_topic(rooms *s, const char *topic);

/* GET /agent/chats, every page (at most 50, as the SDK): their ids into
 * *out, an empty set the caller frees. Errors as band_agent_chats. */
err_code rooms_fetch(band_client *rest, rooms *out, char *err);

/* Joins both topics of room `id` and adds it to the set. On failure
 * nothing is joined and the set is unchanged. ERR_USAGE when the room is
 * served already or the id is too long; else errors as phx_join. */
err_code rooms_join(rooms *s, phx_client *phx, const char *id, char *err);

/* Leaves both topics (either may be gone already: a refused rejoin drops
 * it) and forgets the room. ERR_NOTFOUND when the room is not served. A
 * leave the server does not answer still forgets the room: from then on
 * its pushes are not ours. */
err_code rooms_leave(rooms *s, phx_client *phx, const char *id, char *err);

#endif
