/* unit: the tiny contract between a unit test file and its runner.
 *
 * Each tests/unit/test_NAME.c defines `unit_cases`, a NULL-terminated list
 * of its cases, and becomes the executable unit-NAME (ctest unit.NAME).
 * `unit-NAME CASE` runs one case. Dynamic assertion messages go through
 * UNIT_CHECK, because CUnit's own macros print their source text, not a
 * runtime string.
 */
#ifndef SMOKE_UNIT_H
#define SMOKE_UNIT_H

#include <CUnit/CUnit.h>
#include <stdio.h>

typedef struct unit_case {
    const char *name;
    void (*fn)(void);
} unit_case;

extern const unit_case unit_cases[];

/* Records a failed assertion with a printf-style message when !cond.
 * Evaluates to cond so a test can stop early: if (!UNIT_CHECK(...)) return; */
#define UNIT_CHECK(cond, ...) unit_check((cond) ? 1 : 0, __LINE__, __FILE__, __VA_ARGS__)
int unit_check(int ok, int line, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
