/* inbox: what phoenix told the stand-in, kept until the loop can act.
 *
 * phoenix runs its callbacks inside phx_service and forbids re-entering
 * the event loop from them (phoenix.h, "Reentrancy"), while handling a
 * push means REST calls and joins. So the callbacks only copy what they
 * are told into this queue, and the runtime drains it in order after
 * phx_service returns. Order matters: a PHX_REJOIN_FAILED must be seen
 * before the PHX_RECONNECTED that follows it.
 *
 * Ownership: the inbox owns its items until inbox_pop hands one over;
 * the caller then owns it and releases it with inbox_item_free. At most
 * INBOX_MAX items wait; past that the oldest push is dropped and counted,
 * as the SDK's per-topic queue drops its oldest. State changes are never
 * dropped: a lost PHX_GAVE_UP would leave the agent running for nothing.
 */
#ifndef FAKE_AGENT_INBOX_H
#define FAKE_AGENT_INBOX_H

#include <stddef.h>

#include <cJSON.h>

#include "phoenix.h"

#define INBOX_MAX 1000

typedef enum inbox_kind {
    INBOX_PUSH,  /* topic, event, payload */
    INBOX_STATE, /* state, close_code, reason, topic (PHX_REJOIN_FAILED) */
} inbox_kind;

typedef struct inbox_item {
    struct inbox_item *next;
    inbox_kind kind;
    char *topic;      /* PUSH; REJOIN_FAILED; else NULL */
    char *event;      /* PUSH only */
    cJSON *payload;   /* PUSH only; always an object */
    phx_event state;  /* STATE only */
    int close_code;   /* STATE only: 0 = no close frame */
    char *reason;     /* STATE only; never NULL there */
} inbox_item;

typedef struct inbox {
    inbox_item *head;
    inbox_item **tail;
    size_t count;
    unsigned dropped; /* pushes lost to INBOX_MAX or to memory */
    unsigned lost_states; /* state changes lost to memory */
} inbox;

void inbox_init(inbox *q);

/* Frees every waiting item. */
void inbox_clear(inbox *q);

/* The next item in arrival order, or NULL; the caller owns it. */
inbox_item *inbox_pop(inbox *q);

void inbox_item_free(inbox_item *it);

/* phoenix callbacks: pass the inbox as phx_options.ud. */
void inbox_on_push(const char *topic, const char *event, const cJSON *payload, void *ud);
void inbox_on_state(const phx_state_info *info, void *ud);

#endif
