/* ctestview: what an operator sees at the end of `ctest -R phase`.
 *
 * CTest 3.25 shows a test's output only when it fails (--output-on-failure)
 * or with -V, so a passing or skipped phase would say nothing on screen: no
 * SCOPE, no [PASS] lines, no OPERATOR STEP, no SKIPPED reason. CTest does
 * offer two hooks, read from CTestCustom.cmake in the build folder (the
 * top-level CMakeLists.txt generates it):
 *
 *   CTEST_CUSTOM_PRE_TEST   band-smoke _ctest-pre    (touches a marker)
 *   CTEST_CUSTOM_POST_TEST  band-smoke _ctest-post   (prints the story)
 *
 * Both run with the build folder as working directory, for every ctest
 * invocation (ctest -L offline and ctest -N too), so both print nothing
 * unless a staging phase ran in this invocation. The post hook reads the
 * test log CTest is still writing (Testing/Temporary/LastTest.log.tmp; CTest
 * renames it to LastTest.log only when it exits), or LastTest.log when that
 * is the live one; a log older than the pre hook's marker belongs to an
 * earlier invocation and is ignored. For each phase test in the log it
 * prints that phase's own lines, in order, and then where the run stands
 * and the exact next command (`band-smoke status --brief`).
 *
 * A failed phase's lines are already on screen when ctest was run with
 * --output-on-failure (README's and SKILL.md's commands), -V or
 * CTEST_OUTPUT_ON_FAILURE: then the story gives that phase its verdict
 * line only and says its lines are above, rather than print them twice.
 * The hook learns ctest's arguments from its parent process, which is
 * ctest itself (platform.h).
 *
 * Everything printed passes through redact.
 */
#ifndef SMOKE_CTESTVIEW_H
#define SMOKE_CTESTVIEW_H

#include <stdio.h>

#include "err.h"

#define CTESTVIEW_MARKER "band-smoke-ctest.marker"

/* `band-smoke _ctest-pre [BUILD]`: records that a ctest invocation began
 * (BUILD defaults to the working directory). Prints nothing; always 0,
 * since a hook failing would fail every ctest run, offline ones included. */
int ctestview_pre(int argc, char **argv);

/* `band-smoke _ctest-post [BUILD]`: when this invocation ran a phase test,
 * prints each phase's lines and the brief status; otherwise nothing.
 * Returns 0 (see above); argv0 locates band-smoke for the status. */
int ctestview_post(int argc, char **argv, const char *argv0);

/* Prints the phase tests found in a CTest log text to `out` (the story
 * part, without the status). With failures_shown, a failed phase's lines
 * are left to what ctest printed above (see above). Returns how many phase
 * tests it found. */
int ctestview_print_log(const char *log_text, int failures_shown, FILE *out);

/* True when ctest itself shows a failed test's output: ctest_args (its
 * argv as NUL-terminated strings, n of them; NULL when unknown) holds
 * --output-on-failure or a verbose flag, or env_value (what
 * CTEST_OUTPUT_ON_FAILURE holds; NULL when unset) is a CMake true value. */
int ctestview_failures_shown(const char *ctest_args, int n, const char *env_value);

#endif
