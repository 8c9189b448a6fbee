/* via_ctest: the rehearsal's operator steps as the command people type.
 *
 * `band-smoke rehearse --via ctest` replaces every `band-smoke phase NAME`
 * step with the real ctest: `ctest --test-dir BUILD -R '^phase\.NN\.name$'
 * --output-on-failure` for one step (what SKILL.md gives an AI client), and
 * `ctest --test-dir BUILD -R phase --output-on-failure` for a whole pass
 * (what README.md gives an operator, run again after each interruption).
 * Then it checks what ctest put on the screen, not what the state says:
 * each phase that ran has its own lines there (suite/ctestview.h), a held
 * phase shows its SKIPPED reason, and every pass ends with a next command.
 *
 * BUILD is a folder in the world's root that includes the build folder's
 * phase tests and CTest hooks (same test commands, same CTestCustom.cmake),
 * because this
 * rehearsal itself often runs under ctest in the build folder, and two
 * ctest processes must not write one Testing/Temporary/LastTest.log.
 */
#ifndef REHEARSAL_VIA_CTEST_H
#define REHEARSAL_VIA_CTEST_H

#include "rehearse.h"

/* Prepares the copy of the phase tests under r->w.root (once; later calls
 * return 0 at once). 0 on success; on failure a failed check says why. */
int via_ctest_open(rehearsal *r);

/* Starts the same ctest command as step_ctest in the background, for a
 * step that signals it while it runs; returns its pid (run.h: run_reap),
 * or -1. */
int via_ctest_start(rehearsal *r, const char *regex);

/* One ctest run with -R `regex`. Checks the screen as above and returns,
 * per phase in run order, what ctest said of it (0 passed, 77 skipped,
 * 1 failed, -1 not run); `text` (may be NULL) receives all ctest printed,
 * malloc'd. Returns ctest's exit code, or -2 when interrupted. */
int step_ctest(rehearsal *r, const char *regex, int phase_status[13], char **text);

/* step_phase's ctest form: the one-step command for `phase` (short name);
 * returns the phase's status as step_phase does (0, 77, 1). */
int step_ctest_phase(rehearsal *r, const char *phase, int want_exit);

/* One operator pass, `ctest -R phase`: every phase up to and including
 * `last_passing` (short name) passes, every later one is SKIPPED with its
 * reason on screen, and `operator_step` (NULL = none) is on screen. Returns
 * 1 when all of that held. */
int step_ctest_pass(rehearsal *r, const char *last_passing, const char *operator_step);

#endif
