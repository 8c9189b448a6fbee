#include "runner.h"

#include <stdio.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <CUnit/TestRun.h>

#include "clock.h"
#include "redact.h"

/* CUnit's handlers and test functions take no user pointer, so the one
 * test being run and its outcome live here for the duration of runner_run. */
static struct {
    phase_env *env;
    runner_result *out;
    int64_t started_ms;
} current;

static void run_current_phase(void)
{
    current.env->def->action(current.env);
}

static void on_test_start(const CU_pTest test, const CU_pSuite suite)
{
    (void)test;
    (void)suite;
    current.started_ms = clock_mono_ms();
}

static void on_test_complete(const CU_pTest test, const CU_pSuite suite,
                             const CU_pFailureRecord first)
{
    (void)test;
    (void)suite;
    runner_result *out = current.out;
    out->duration_ms = clock_mono_ms() - current.started_ms;
    for (CU_pFailureRecord f = first; f; f = f->pNext) {
        if (out->failures++ == 0)
            redact_into(f->strCondition ? f->strCondition : "(no message)",
                        out->message, sizeof out->message);
    }
    out->passed = out->failures == 0;
}

static err_code register_phases(CU_pSuite *suite, CU_pTest *wanted,
                                const phase_def *def, char *err)
{
    *suite = CU_add_suite("staging", NULL, NULL);
    if (!*suite)
        return err_set(err, ERR_NOMEM, "CUnit: cannot add the staging suite");
    for (int i = 0; i < PH__COUNT; i++) {
        const phase_def *d = phase_get((phase_id)i);
        CU_pTest t = CU_add_test(*suite, d->ctest_name, run_current_phase);
        if (!t || CU_get_error() != CUE_SUCCESS)
            return err_set(err, ERR_USAGE, "CUnit: cannot register %s (%s)",
                           d->ctest_name, CU_get_error_msg());
        if (d == def)
            *wanted = t;
    }
    return ERR_OK;
}

err_code runner_run(phase_env *env, runner_result *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (CU_initialize_registry() != CUE_SUCCESS)
        return err_set(err, ERR_NOMEM, "CUnit: %s", CU_get_error_msg());
    CU_pSuite suite = NULL;
    CU_pTest test = NULL;
    err_code rc = register_phases(&suite, &test, env->def, err);
    if (rc == ERR_OK) {
        current.env = env;
        current.out = out;
        CU_set_test_start_handler(on_test_start);
        CU_set_test_complete_handler(on_test_complete);
        /* No CU_print_run_results: the operator reads the phase's own
         * lines; the verdict travels in the exit code and junit.xml. */
        CU_run_test(suite, test);
        /* The records are the verdict: a handler that never fired (CUnit
         * refused the run) must not look like a pass. */
        if (CU_get_number_of_failure_records() > out->failures) {
            out->failures = CU_get_number_of_failure_records();
            out->passed = 0;
            if (!out->message[0])
                snprintf(out->message, sizeof out->message, "CUnit could not run the test");
        }
        if (CU_get_number_of_tests_run() == 0 && out->failures == 0) {
            out->passed = 0;
            snprintf(out->message, sizeof out->message, "CUnit ran no test");
        }
        current.env = NULL;
        current.out = NULL;
    }
    CU_cleanup_registry();
    return rc;
}
