/* attempts: the messages this process has already tried to handle.
 *
 * The SDK gives each message at most one attempt per process
 * (max_message_retries = 1, band-protocol.md 6.2): a message that failed
 * stays "actionable" on the platform, and /messages/next keeps offering
 * it, so without this memory the agent would retry it forever. The set
 * only grows; a smoke agent sees a handful of messages in its life.
 */
#ifndef FAKE_AGENT_ATTEMPTS_H
#define FAKE_AGENT_ATTEMPTS_H

#include <stddef.h>

#include "band_rest.h"
#include "err.h"

typedef struct attempts {
    char (*ids)[BAND_ID_SZ]; /* owned */
    size_t count, cap;
} attempts;

/* An empty set; no allocation until the first add. */
void attempts_init(attempts *a);
void attempts_free(attempts *a);

/* 1 when `id` was added before. */
int attempts_contains(const attempts *a, const char *id);

/* Adds `id` (a no-op when present). ERR_USAGE for an id too long for
 * BAND_ID_SZ, ERR_NOMEM. */
err_code attempts_add(attempts *a, const char *id, char *err);

#endif
