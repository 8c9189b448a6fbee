/* err: codes have names, messages are formatted and wrapped, never overflow. */
#include "err.h"
#include "unit.h"

#include <string.h>

static void test_every_code_has_a_name(void)
{
    for (int c = 0; c < ERR__COUNT; c++)
        UNIT_CHECK(strcmp(err_str((err_code)c), "unknown error") != 0, "code %d has no name", c);
    UNIT_CHECK(strcmp(err_str((err_code)999), "unknown error") == 0, "out of range code");
}

static void test_set_returns_code_and_formats(void)
{
    char buf[ERR_BUFSZ];
    err_code rc = err_set(buf, ERR_IO, "cannot read %s (%d)", "state.json", 13);
    CU_ASSERT_EQUAL(rc, ERR_IO);
    CU_ASSERT_STRING_EQUAL(buf, "cannot read state.json (13)");
    CU_ASSERT_EQUAL(err_set(NULL, ERR_TIMEOUT, "ignored"), ERR_TIMEOUT);
}

static void test_wrap_prefixes_and_truncates(void)
{
    char buf[ERR_BUFSZ];
    err_set(buf, ERR_CORRUPT, "not JSON");
    err_wrap(buf, ERR_CORRUPT, "loading %s", "/x/state.json");
    CU_ASSERT_STRING_EQUAL(buf, "loading /x/state.json: not JSON");
    char big[2 * ERR_BUFSZ];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    err_set(buf, ERR_IO, "%s", big);
    err_wrap(buf, ERR_IO, "%s", big);
    CU_ASSERT_EQUAL(strlen(buf), ERR_BUFSZ - 1);
}

const unit_case unit_cases[] = {
    {"every_code_has_a_name", test_every_code_has_a_name},
    {"set_returns_code_and_formats", test_set_returns_code_and_formats},
    {"wrap_prefixes_and_truncates", test_wrap_prefixes_and_truncates},
    {NULL, NULL},
};
