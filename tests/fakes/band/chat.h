/* chat: the rules of messages, mentions and delivery (protocol §2-4).
 *
 * A text message needs at least one mention of a room participant; each
 * mentioned agent gets a delivery that walks
 *   pending -> delivered -> processing -> processed | failed
 * where every /processing call opens a new attempt and /processed or
 * /failed closes the open one. "Actionable" for an agent (what /next
 * returns, oldest first) is every message addressed to it that is not
 * processed yet. Events (tool_call, thought, ...) are stored in the room
 * as non-text messages and are never delivered.
 *
 * Functions that refuse something fill a chat_error with the HTTP status
 * and the platform's error code, and return NULL. Nothing here talks to a
 * socket: the caller pushes the results (fanout.h).
 */
#ifndef FAKE_BAND_CHAT_H
#define FAKE_BAND_CHAT_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "store.h"

typedef struct chat_error {
    int status;       /* 403, 404 or 422 */
    const char *code; /* "mentions_required", "no_open_attempt", ... */
    char pointer[64]; /* JSON pointer of the offending field, "" if none */
    char message[200];
} chat_error;

/* A text message from `sender` (who must be a participant) built from the
 * request's "message" object {content, mentions[]}: mention items carry
 * id, handle or name (and an optional kind "mention" | "reference"). The
 * 422 codes are those of protocol §2. */
store_message *chat_send(store *st, store_room *room, store_principal *sender, const cJSON *message,
                         int64_t now_ms, chat_error *err);

/* An execution event from the request's "event" object
 * {content, message_type, metadata?}. */
store_message *chat_post_event(store_room *room, store_agent *agent, const cJSON *event,
                               int64_t now_ms, chat_error *err);

/* The delivery of `m` to `agent`, NULL when the message does not address it. */
store_delivery *chat_delivery(const store_message *m, const store_agent *agent);

/* True when `who` is among the message's mentions. */
int chat_mentions(const store_message *m, const store_principal *who);

/* Pending becomes delivered (stamped once); later states are kept. */
void chat_mark_delivered(store_delivery *d, int64_t now_ms);

/* The lifecycle marks; each returns the attempt it opened or closed.
 * processing refuses an already processed message; processed and failed
 * need an open attempt (422 no_open_attempt). */
store_attempt *chat_mark_processing(store_delivery *d, int64_t now_ms, chat_error *err);
store_attempt *chat_mark_processed(store_delivery *d, int64_t now_ms, chat_error *err);
store_attempt *chat_mark_failed(store_delivery *d, const char *error, int64_t now_ms,
                                chat_error *err);

/* The oldest actionable message of `room` for `agent`, or NULL. */
store_message *chat_next_for(const store_room *room, const store_agent *agent);

/* "delivered", "processing", ...; "pending" for a message not handed out. */
const char *chat_state_name(store_delivery_state state);

#endif
