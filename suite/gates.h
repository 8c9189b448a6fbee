/* gates: what must be true before a phase may run.
 *
 * A gate is data: one rule per phase (gates.c) naming the run it needs, the
 * phase that must have passed before it, the probe whose latest attempt must
 * have passed, and an optional evidence check (design section 5). A closed
 * gate has a reason that says what is missing and what to do, printed as
 * the phase's first line `SKIPPED: <reason>` (exit 77).
 *
 * Before any of that, the run's lifecycle (lifecycle.h, docs/lifecycle.md)
 * decides whether the phase may run at all in the state the run is in:
 * e.g. nothing but cleanup, report and teardown runs on a run marked
 * failed, and nothing runs on a finished one but a new start.
 *
 * Checkpoints hold the run: after the Wi-Fi or sleep checkpoint passes,
 * every later phase except the one that resumes it stays closed until that
 * one passes, so one `ctest -R phase` never runs past an operator step.
 *
 * Evidence gates record what they measured into the run state when they
 * open (state_t.evidence), which is why gate_check takes the context. One
 * evidence gate can also decide a failure: a disconnect logged after the
 * Wi-Fi checkpoint with no reconnect within SMOKE_RECONNECT_WINDOW_S means
 * the agent did not recover, which is a FAIL of the Wi-Fi step, not a
 * reason to wait forever.
 */
#ifndef SMOKE_GATES_H
#define SMOKE_GATES_H

#include "ctx.h"
#include "phases.h"

#define GATE_HOST_SLEEP_MIN_MS 30000

typedef struct gate_verdict {
    int open;   /* the phase may run */
    int fails;  /* closed because the evidence already proves the phase
                   failed (e.g. the agent never reconnected within the
                   window): the engine records a failure, not a skip */
    char reason[1024];
    char cmd[512]; /* closed: the command that goes on, when the reason
                      names one (the operator may have to act first);
                      "" otherwise */
} gate_verdict;

/* Decides whether phase `id` may run now, from ctx->st (NULL = no run),
 * agent.log and the clock. */
void gate_check(smoke_ctx *ctx, phase_id id, gate_verdict *out);

/* True when the run waits at an operator checkpoint for `id`; fills the
 * resume instruction. A resume phase that failed after its checkpoint no
 * longer holds the run: the failure ends it (cleanup follows). Part of
 * gate_check; exposed for `status`. */
int gate_held(const smoke_ctx *ctx, phase_id id, gate_verdict *out);

#endif
