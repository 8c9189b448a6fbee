/* runner: one phase as one CUnit test case, timed in wall time.
 *
 * CUnit 2.1-3 traps this module exists to contain (c-stack.md section 1):
 * CU_basic_run_* re-installs its own handlers, "Elapsed time" is CPU time,
 * CU_FAIL prints its source text, and the run's verdict must come from the
 * failure records, not from the return code. So the runner registers the
 * thirteen phases as tests of one suite "staging", installs its own
 * handlers, calls CU_run_test for the one phase asked for, and measures
 * wall time with the monotonic clock.
 */
#ifndef SMOKE_RUNNER_H
#define SMOKE_RUNNER_H

#include <stdint.h>

#include "err.h"
#include "phases.h"

typedef struct runner_result {
    int passed;
    unsigned failures;  /* failure records of this test */
    int64_t duration_ms;
    char message[1024]; /* first failure, redacted; "" when passed */
} runner_result;

/* Runs def->action(env) inside CUnit. Prints nothing of CUnit's own (its
 * run summary is console noise to an operator; the phase's lines tell the
 * story, and the result goes to the exit code and junit.xml). ERR_USAGE/ERR_NOMEM when CUnit itself cannot be set up;
 * a failing phase is ERR_OK with out->passed == 0. */
err_code runner_run(phase_env *env, runner_result *out, char *err);

#endif
