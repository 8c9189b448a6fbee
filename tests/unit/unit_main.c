/* The runner every unit-NAME executable shares: one suite, its cases in
 * order, CUnit's verbose basic interface, exit 1 on any failure record. */
#include "unit.h"

#include <CUnit/Basic.h>
#include <stdarg.h>
#include <string.h>

int unit_check(int ok, int line, const char *file, const char *fmt, ...)
{
    if (ok) {
        CU_assertImplementation(CU_TRUE, (unsigned)line, "ok", file, "", CU_FALSE);
        return 1;
    }
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    CU_assertImplementation(CU_FALSE, (unsigned)line, msg, file, "", CU_FALSE);
    return 0;
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    CU_pSuite suite = CU_add_suite("unit", NULL, NULL);
    int added = 0;
    for (const unit_case *c = unit_cases; suite && c->name; c++) {
        if (only && strcmp(only, c->name) != 0)
            continue;
        CU_add_test(suite, c->name, c->fn);
        if (CU_get_error() != CUE_SUCCESS) {
            fprintf(stderr, "cannot register %s: duplicate or invalid\n", c->name);
            CU_cleanup_registry();
            return 2;
        }
        added++;
    }
    if (!suite || added == 0) {
        fprintf(stderr, "no test case %s\n", only ? only : "registered");
        CU_cleanup_registry();
        return 2;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned bad = CU_get_number_of_failure_records();
    CU_cleanup_registry();
    return bad ? 1 : 0;
}
