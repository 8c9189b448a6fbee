/* watch: live guidance at an operator checkpoint, `band-smoke watch`.
 *
 * At the Wi-Fi checkpoint an operator would otherwise tail agent.log by
 * hand to know when to turn Wi-Fi back on. `band-smoke watch` follows it
 * and says, as it happens:
 *
 *   WebSocket disconnected at 12:01:03 (41 s after the checkpoint): turn Wi-Fi back on now
 *   WebSocket reconnected at 12:01:15, outage 12.1 s: resume with ctest ...
 *
 * At the sleep checkpoint it reports, once the host wakes, the sleep the
 * clocks measured and whether the agent's WebSocket dropped and came back.
 *
 * It decides nothing of its own: each look runs the resuming phase's gate
 * (gates.h) on a freshly loaded run state and scans agent.log with the
 * gate's own patterns (agentlog.h), so it is done exactly when the gate
 * would open. It never takes the state lock and never saves: the gates'
 * measurements stay in memory. It exits by itself when the step's evidence
 * is complete, when the evidence proves a failure, when the run moves on,
 * or at its deadline (saying what is still missing, in the gate's words).
 * Waits show as a live line on a terminal and as plain lines otherwise
 * (progress.h). Every line passes through redact.
 *
 * An AI client does not run it: it ends its turn at a checkpoint.
 */
#ifndef SMOKE_WATCH_H
#define SMOKE_WATCH_H

#include <stdint.h>

#include "ctx.h"

#define WATCH_DEFAULT_TIMEOUT_S 900
#define WATCH_POLL_MS 250

typedef struct watch_opts {
    int64_t timeout_ms; /* give up after this long */
    int poll_ms;        /* how often state, agent.log and the clocks are read */
} watch_opts;

/* Watches the checkpoint the run waits at; output on ctx->out. Returns the
 * exit code: 0 the step's evidence is complete (or the run moved on),
 * 1 deadline reached, a failure proven, no checkpoint to watch, or the
 * state unreadable; 128 + N when stop signal N (sig.h) ended the watch. */
int watch_run(smoke_ctx *ctx, const watch_opts *opts);

/* `band-smoke watch [--timeout SECONDS]`; 2 on a usage error. */
int watch_main(smoke_ctx *ctx, int argc, char **argv);

#endif
