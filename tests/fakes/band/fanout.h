/* fanout: who hears about what (protocol §5.4 and §10).
 *
 * chat_room:<room>
 *   message_created  a text message: to every joined user socket, and to
 *                    the joined sockets of the agents it mentions (never
 *                    its sender). Handing it to an agent marks the
 *                    delivery delivered.
 *   message_updated  a delivery changed (processing, processed, failed):
 *                    to joined user sockets only, with the whole
 *                    metadata.delivery_status.
 * room_participants:<room>
 *   participant_added, participant_removed, room_deleted: to every joined socket.
 * agent_rooms:<agent>
 *   room_added, room_removed: to that agent's sockets.
 *
 * Only joined topics receive anything; channel_push adds the join_ref.
 */
#ifndef FAKE_BAND_FANOUT_H
#define FAKE_BAND_FANOUT_H

#include "server.h"
#include "store.h"

void fanout_message_created(server *srv, store_message *m);
void fanout_message_updated(server *srv, const store_message *m);
void fanout_participant_added(server *srv, const store_room *room, const store_participant *p);
void fanout_participant_removed(server *srv, const store_room *room, const store_principal *who);
void fanout_room_added(server *srv, const store_room *room, const store_agent *agent);
void fanout_room_removed(server *srv, const store_room *room, const store_agent *agent);
void fanout_room_deleted(server *srv, const store_room *room);

#endif
