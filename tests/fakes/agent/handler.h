/* handler: one mentioned message, handled the way agent.py and the SDK do.
 *
 * The turn (band-protocol.md 6.2 and 6.3), all over REST:
 *   POST .../processing            (refused: the turn is not run; /next
 *                                   offers the message again later)
 *   POST .../activity working=true
 *   find `marker:(\S+)` in the content       (none: the turn fails)
 *   GET  .../participants, pick the first participant whose type is not
 *        "Agent" and who has a handle
 *   POST .../messages "sandbox-ack:<token>" mentioning {id, handle}
 *   POST .../activity working=false          (always, as the SDK does)
 *   POST .../processed, or .../failed {"error": <why the turn failed>}
 * A message is attempted at most once per process (attempts.h); own
 * messages and ones the platform already shows as processed are skipped.
 * The SDK's extras around the turn (context hydration, tool events, the
 * 3 s activity refresh) are left out: the smoke's gates do not read them.
 *
 * Lifetime: a handler borrows the REST client and the agent id, which
 * must outlive it, and owns its attempts set (handler_free).
 */
#ifndef FAKE_AGENT_HANDLER_H
#define FAKE_AGENT_HANDLER_H

#include <cJSON.h>

#include "attempts.h"
#include "band_rest.h"

typedef struct handler {
    band_client *rest;    /* borrowed: the agent-key client */
    const char *agent_id; /* borrowed */
    attempts tried;       /* owned */
    int activity_failing; /* warn once per run of failed activity reports, as the SDK */
} handler;

typedef enum handler_outcome {
    HANDLER_SKIPPED,   /* not ours to handle, or attempted before */
    HANDLER_DEFERRED,  /* /processing failed: no attempt was opened */
    HANDLER_PROCESSED, /* replied and marked processed */
    HANDLER_FAILED,    /* the turn or its final mark failed */
} handler_outcome;

void handler_init(handler *h, band_client *rest, const char *agent_id);
/* Frees the attempts set; also safe on a zeroed, never initialised handler. */
void handler_free(handler *h);

/* 1 when this process already attempted the message. */
int handler_tried(const handler *h, const char *message_id);

/* A message from REST (/messages/next, the processing sweep) in room_id. */
handler_outcome handler_handle(handler *h, const char *room_id, const band_message *m);

/* A message_created payload pushed on chat_room:<room_id>. A payload that
 * is no ChatMessage is logged as the SDK does and skipped. */
handler_outcome handler_handle_push(handler *h, const char *room_id, const cJSON *payload);

#endif
