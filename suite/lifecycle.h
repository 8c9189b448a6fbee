/* lifecycle: where a run stands, as one small state machine.
 *
 * docs/lifecycle.md is the contract; this module is its code. The state is
 * never stored: it is derived from the run state (state.json) every time,
 * so a killed process, an edited file or an older band-smoke can never
 * leave the two out of step.
 *
 *   NONE      no run yet
 *   OPEN      a run started and nothing of ours exists yet (no sandbox this
 *             suite created, no agent or room, no launched agent): a failed
 *             phase stays resumable at that phase
 *   ACTIVE    something exists and no phase's latest result failed
 *   FAILING   something exists and a phase's latest result failed: cleanup,
 *             report and teardown end the run (the failed phase alone may
 *             still be retried before cleanup runs)
 *   CLOSING   the run was ended by hand or by evidence (`failed` or
 *             `completed`) and is not cleaned up yet: only cleanup, report
 *             and teardown run; nothing is provisioned
 *   ENDED     cleanup passed and the run is completed or failed: report and
 *             teardown finish it
 *   FINISHED  ENDED and teardown passed: read-only; only phase.01 (a new
 *             run) writes again
 *   STALE     idle for over 12 h and not finished: never continued; cleanup
 *             may still reap it, phase.01 archives it
 *
 * Nothing here writes: callers (gates, engine, commands) ask and act.
 */
#ifndef SMOKE_LIFECYCLE_H
#define SMOKE_LIFECYCLE_H

#include <stddef.h>
#include <stdint.h>

#include "phases.h"
#include "state.h"

typedef enum life_state {
    LIFE_NONE,
    LIFE_OPEN,
    LIFE_ACTIVE,
    LIFE_FAILING,
    LIFE_CLOSING,
    LIFE_ENDED,
    LIFE_FINISHED,
    LIFE_STALE,
    LIFE__COUNT
} life_state;

/* Where `st` (NULL = no run) stands at `now_ms`. *failed (may be NULL) is
 * the failed phase when FAILING, PH__COUNT otherwise. */
life_state life_of(const state_t *st, int64_t now_ms, phase_id *failed);

/* "none", "open", ... "stale". */
const char *life_name(life_state s);

/* 1 when the run has something a cleanup or teardown must undo: a sandbox
 * this suite created, a launched agent, or an agent or room it provisioned
 * itself, by id or by the name or title recorded before its create (ids
 * only carried over from an archived run do not count: the
 * next launch reaps those first). */
int life_owns_something(const state_t *st);

/* 1 when phase `id` has passed in this run for good, so running it again is
 * not needed: a pass of the report phase counts only after cleanup passed
 * (it renders the end of the run); on a FINISHED run every recorded phase
 * counts. Start counts only while the run can go on (OPEN, ACTIVE,
 * FAILING): elsewhere its gate says what comes instead. */
int life_done(const state_t *st, int64_t now_ms, phase_id id);

/* Whether the lifecycle lets phase `id` run in the current state. 1 = the
 * gate rules decide; 0 = skipped, with `reason` saying why and `cmd` (may
 * be "") the command that does go on. Checkpoint holds are gates.c's. */
int life_allows(const state_t *st, int64_t now_ms, phase_id id, char *reason, size_t cap,
                char *cmd, size_t cmd_cap);

/* 1 when a skip may be written for phase `id`: never over a passed or
 * failed result (a later skip never replaces a result), never on a
 * FINISHED run (its results are never rewritten), never on a STALE one
 * (the save would make it look recent). */
int life_may_record_skip(const state_t *st, int64_t now_ms, phase_id id);

/* Run-level commands (`record-phase X`, `record-observation`): 1 when
 * allowed in this state; 0 with `reason`. `target` is the run phase asked
 * for; RUN__COUNT means an observation. */
int life_allows_record(const state_t *st, int64_t now_ms, run_phase target, char *reason,
                       size_t cap);

/* The run phase cleanup ends the run with: failed when the run was FAILING
 * or marked failed, completed otherwise. */
run_phase life_end_phase(const state_t *st, int64_t now_ms);

#endif
