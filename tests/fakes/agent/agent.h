/* agent: the stand-in's runtime, the band-sdk Agent that agent.py starts.
 *
 * Startup, in the SDK's order (band-protocol.md 6.1):
 *   GET /agent/me (429: up to 6 tries; no description: refuse to start),
 *   WebSocket connect (up to 11 attempts, link.h), join agent_control:<id>
 *   ("Connected to platform"), join agent_rooms:<id>, then every room
 *   Band lists is joined and caught up (presence.h), then the readiness
 *   line
 *     INFO band.agent: Agent started: <name> (band-sdk 0.0.0+standin)
 *
 * Then one single-threaded loop: phx_service with a short timeout; the
 * inbox it filled is drained in order (inbox.h); rooms idle for 60 s are
 * polled. Messages are handled synchronously over REST with the SDK's
 * agent-side retries (handler.h). Phoenix reconnects by itself with the
 * SDK's backoff; the runtime only reacts (8.2, 8.3):
 *   PHX_DISCONNECTED  WARNING band.platform.link: WebSocket disconnected: <reason>
 *                     ("None" after a clean 1000/1001 close)
 *   PHX_RECONNECTED   the rejoined topics' "Successfully subscribed" lines,
 *                     INFO band.platform.link: WebSocket reconnected — reconciling room state
 *                     then the rooms are reconciled and caught up
 *   PHX_GAVE_UP       1000/1001: the run ends cleanly; 1008 or anything
 *                     else: the run fails
 * A supersede push (another connection of this agent took over) turns the
 * disconnect line into "WebSocket disconnected after terminal platform
 * reason: superseded"; the close that follows ends the run.
 * A signal (*stop set by main's handler) ends the run cleanly:
 *   INFO band.agent: Event loop shutting down! reason=Signal received
 * and the socket is closed with 1000.
 *
 * With FAKE_AGENT_NO_RECONNECT=1 the first lost connection is closed for
 * good instead of retried; the process stays up (REST polls go on) until
 * a signal, so a test can watch an agent that never comes back.
 */
#ifndef FAKE_AGENT_AGENT_H
#define FAKE_AGENT_AGENT_H

#include <signal.h>

#include "err.h"
#include "settings.h"

/* What the readiness line and --sdk-version report: honestly not the SDK. */
#define AGENT_SDK_VERSION "0.0.0+standin"

/* Runs the agent until a signal (watched through *stop), a final close or
 * a failure. ERR_OK for a clean end: a signal, or Band closing with
 * 1000/1001. ERR_CONFIG when Band's agent record has no description (the
 * SDK's ValueError), ERR_CLOSED for a terminal close or a lost link that
 * will not come back, else the failing call's code; err says what. */
err_code agent_run(const settings *s, const volatile sig_atomic_t *stop, char *err);

#endif
