/* engine: one step of the run, `band-smoke phase NAME [--again]`.
 *
 * The order of one step, the same for every phase:
 *   1. lock and load the run state (a corrupt state.json stops here: exit 1,
 *      the file untouched);
 *   2. a phase that already passed in this run is not re-run (exit 0)
 *      unless --again; nothing is re-run on a finished run;
 *   3. the gate (gates.h, with the run's lifecycle, lifecycle.h): closed ->
 *      "SKIPPED: <reason>" first, exit 77; the skip is saved only where it
 *      replaces no result;
 *   4. the action as a CUnit test case (runner.h);
 *   5. the result recorded in the run state, evidence.md and junit.xml
 *      rendered again, and the operator told what comes next.
 */
#ifndef SMOKE_ENGINE_H
#define SMOKE_ENGINE_H

#include "ctx.h"
#include "phases.h"

#define ENGINE_EXIT_PASSED 0
#define ENGINE_EXIT_FAILED 1
#define ENGINE_EXIT_USAGE 2
#define ENGINE_EXIT_SKIPPED 77

/* Runs one phase; returns the process exit code. */
int engine_run_phase(smoke_ctx *ctx, const phase_def *def, int again);

/* Records that phase `def`, started at `started_at`, was interrupted by a
 * stop signal (`signame`, e.g. "SIGINT"): the phase's result becomes a
 * skip saying so (never a failure: the run stays resumable, at that
 * phase), the state is saved and the reports rendered. Returns exit_code
 * (128 + the signal) for main to exit with. docs/lifecycle.md, event
 * "interrupt". */
int engine_record_interrupted(smoke_ctx *ctx, const phase_def *def, const char *signame,
                              int64_t started_at, int exit_code);

/* Renders evidence.md and junit.xml from ctx->st into the state folder.
 * Nothing to render (ERR_OK) when there is no run. */
err_code engine_render(smoke_ctx *ctx, char *err);

/* The next thing to do in this run, as a sentence and a command. */
void engine_next(smoke_ctx *ctx, char *why, size_t why_cap, char *cmd, size_t cmd_cap);

#endif
