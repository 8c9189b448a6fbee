/* channel: Phoenix v2 channels on a WebSocket (protocol §5.2-5.3).
 *
 * Every frame is [join_ref, ref, topic, event, payload]. The fake answers
 *   phx_join   ok for agent_control:<self>, agent_rooms:<self> (agents),
 *              user_rooms:<self> (users), and chat_room:<room> /
 *              room_participants:<room> for members; otherwise an error
 *              reply, reason "unauthorized" (or "unmatched topic" for an
 *              unknown kind of topic). A rejoin takes the new join_ref.
 *   phx_leave  ok, then phx_close on that topic.
 *   heartbeat  on topic "phoenix": ok, matched by ref.
 * Anything else gets an error reply; frames that are not a 5-element JSON
 * array are ignored, as Phoenix drops what it cannot decode.
 *
 * Pushes go out only on joined topics and carry that subscription's
 * join_ref (the Python client drops any other).
 */
#ifndef FAKE_BAND_CHANNEL_H
#define FAKE_BAND_CHANNEL_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "ws.h"

/* Handles one whole text message from the client. */
void channel_receive(ws_conn *c, const char *text, size_t len);

/* Whether the connection joined `topic`. */
int channel_joined(const ws_conn *c, const char *topic);

/* Queues [join_ref, null, topic, event, payload] when `topic` is joined;
 * 1 when queued, 0 otherwise. The payload stays the caller's. */
int channel_push(ws_conn *c, const char *topic, const char *event, const cJSON *payload);

/* The garbage fault: invalid JSON, a 4-element array, a non-object
 * payload on every joined topic (with its join_ref), and a reply whose
 * ref is 2047 digits long. */
void channel_send_garbage(ws_conn *c);

/* Forgets every subscription (the socket is closing). */
void channel_leave_all(ws_conn *c);

#endif
