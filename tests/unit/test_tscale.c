/* tscale: the scale is parsed strictly, applied proportionally, and never
 * turns a real wait into no wait at all. */
#include "tscale.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static void test_parse_accepts_the_open_unit_interval(void)
{
    double v = 0;
    CU_ASSERT_EQUAL(tscale_parse("1", &v, NULL), ERR_OK);
    CU_ASSERT_DOUBLE_EQUAL(v, 1.0, 1e-12);
    CU_ASSERT_EQUAL(tscale_parse("0.05", &v, NULL), ERR_OK);
    CU_ASSERT_DOUBLE_EQUAL(v, 0.05, 1e-12);
}

static void test_parse_refuses_and_names_the_variable(void)
{
    const char *bad[] = {"0", "-0.5", "1.5", "abc", "0.1x", "nan", "inf", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[ERR_BUFSZ] = "";
        double v = 42;
        UNIT_CHECK(tscale_parse(bad[i], &v, err) == ERR_CONFIG, "'%s' accepted", bad[i]);
        UNIT_CHECK(strstr(err, TSCALE_ENV) != NULL, "message for '%s' names no variable: %s",
                   bad[i], err);
        UNIT_CHECK(v == 42, "'%s' wrote the output", bad[i]);
    }
}

static void test_apply_keeps_proportions_and_a_floor(void)
{
    CU_ASSERT_EQUAL(tscale_apply(20000, 1.0), 20000);
    CU_ASSERT_EQUAL(tscale_apply(20000, 0.1), 2000);
    CU_ASSERT_EQUAL(tscale_apply(30000, 0.1), 3000);
    CU_ASSERT_EQUAL(tscale_apply(3, 0.01), 1);
    CU_ASSERT_EQUAL(tscale_apply(0, 0.5), 0);
    CU_ASSERT_EQUAL(tscale_apply(-5, 0.5), -5);
}

static void test_environment_drives_the_default(void)
{
    unsetenv(TSCALE_ENV);
    CU_ASSERT_DOUBLE_EQUAL(tscale_factor(), 1.0, 1e-12);
    CU_ASSERT_EQUAL(tscale_ms(45000), 45000);
    setenv(TSCALE_ENV, "0.2", 1);
    CU_ASSERT_EQUAL(tscale_ms(45000), 9000);
    setenv(TSCALE_ENV, "fast please", 1);
    CU_ASSERT_EQUAL(tscale_ms(45000), 45000);
    unsetenv(TSCALE_ENV);
}

const unit_case unit_cases[] = {
    {"parse_accepts_the_open_unit_interval", test_parse_accepts_the_open_unit_interval},
    {"parse_refuses_and_names_the_variable", test_parse_refuses_and_names_the_variable},
    {"apply_keeps_proportions_and_a_floor", test_apply_keeps_proportions_and_a_floor},
    {"environment_drives_the_default", test_environment_drives_the_default},
    {NULL, NULL},
};
