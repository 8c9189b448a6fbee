/* resync: catching a room up over REST, as the SDK's execution loop does.
 *
 * Pushes are lost while the WebSocket is down, so the SDK asks REST what
 * is pending (band-protocol.md 6.1 step 7, 8.2): at startup and after
 * every reconnect it re-runs messages stuck in "processing" and then
 * drains /messages/next until Band answers 204; when a room has been idle
 * for 60 s it drains /messages/next again.
 *
 * A message this process already attempted ends a drain: /next offers the
 * oldest unprocessed message, and a failed one stays first in line, so
 * going on would only ask for it again (attempts.h); so does a message
 * whose /processing mark failed. Messages behind it still arrive as
 * pushes, and the next drain tries again.
 */
#ifndef FAKE_AGENT_RESYNC_H
#define FAKE_AGENT_RESYNC_H

#include <signal.h>

#include "err.h"
#include "handler.h"

/* Most messages one drain handles before giving the loop back. */
#define RESYNC_MAX_MESSAGES 100

/* The processing sweep, then a /next drain. Errors as the REST calls;
 * ERR_WRONG_STATE when *stop became non-zero. */
err_code resync_room(handler *h, const char *room_id, const volatile sig_atomic_t *stop,
                     char *err);

/* The /next drain alone (the idle poll). */
err_code resync_next(handler *h, const char *room_id, const volatile sig_atomic_t *stop,
                     char *err);

#endif
