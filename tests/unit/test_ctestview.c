/* ctestview: what the end of a ctest run shows, from CTest log texts in
 * the shape CTest 3.25 writes them (Testing/Temporary/LastTest.log). */
#include "ctestview.h"

#include "tk.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

/* One test's block as CTest logs it; `output` ends with or without '\n'. */
static void add_test(char *log, size_t cap, int n, const char *name, const char *output)
{
    size_t len = strlen(log);
    snprintf(log + len, cap - len,
             "%d/13 Testing: %s\n%d/13 Test: %s\nCommand: \"/b/band-smoke\" \"phase\"\n"
             "Directory: /b\n\"%s\" start time: Dec 02 18:32 UTC\nOutput:\n"
             "----------------------------------------------------------\n"
             "%s<end of output>\nTest time =   0.02 sec\n"
             "----------------------------------------------------------\nTest Passed.\n"
             "\"%s\" end time: Dec 02 18:32 UTC\n\n",
             n, name, n, name, name, output, name);
}

static char *render_shown(const char *log, int failures_shown, int *found)
{
    char *path = tk_path(getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", "ctestview-out.txt");
    FILE *fp = fopen(path, "w+");
    *found = ctestview_print_log(log, failures_shown, fp);
    fclose(fp);
    char *text = tk_read(path, NULL);
    remove(path);
    free(path);
    return text;
}

static char *render(const char *log, int *found)
{
    return render_shown(log, 0, found);
}

static void says(const char *text, const char *needle)
{
    UNIT_CHECK(text && strstr(text, needle), "the screen lacks \"%s\":\n%s", needle,
               text ? text : "(nothing)");
}

static void test_phase_lines_shown(void)
{
    static char log[16384] = "Start testing: Dec 02 18:32 UTC\n"
                             "----------------------------------------------------------\n";
    add_test(log, sizeof log, 1, "phase.01.start",
             "== phase.01.start: Start (run ab12cd34)\nSCOPE: this run proves\n"
             "PASSED phase.01.start in 1 ms: run ab12cd34 started\n"
             "next: phase.02.preflight (Preflight)\n"
             "  ctest --test-dir build -R '^phase\\.02\\.preflight$' --output-on-failure\n");
    add_test(log, sizeof log, 2, "phase.02.preflight",
             "[FAIL] SBX_SANDBOX is unset\nFAILED phase.02.preflight in 1 ms: 1 of 8 failed");
    add_test(log, sizeof log, 3, "phase.03.sandbox", "SKIPPED: phase.02 has not passed\n");
    add_test(log, sizeof log, 4, "phase.04.launch", "SKIPPED: phase.03 has not passed\n");
    add_test(log, sizeof log, 5, "phase.05.initial", "SKIPPED: phase.03 has not passed\n");
    int found = 0;
    char *out = render(log, &found);
    UNIT_CHECK(found == 5, "found %d phases", found);
    says(out, "---- what each phase said ----\nphase.01.start (Start): passed\n"
              "  SCOPE: this run proves\n  PASSED phase.01.start in 1 ms");
    UNIT_CHECK(strstr(out, "next: ") == NULL && strstr(out, "== phase") == NULL,
               "the per-phase next: or banner is shown:\n%s", out);
    /* Output without a final newline still shows its last line. */
    says(out, "phase.02.preflight (Preflight): FAILED\n  [FAIL] SBX_SANDBOX is unset\n"
              "  FAILED phase.02.preflight in 1 ms: 1 of 8 failed\n");
    says(out, "phase.03.sandbox (Sandbox): SKIPPED: phase.02 has not passed\n");
    says(out, "phase.05.initial (Initial probe): SKIPPED, the same reason as phase.04.launch");
    free(out);
}

/* ctest --output-on-failure already printed the failed phase's lines:
 * the story gives its verdict line and points up, and the rest is as
 * without the flag. */
static void test_failed_lines_not_repeated(void)
{
    static char log[16384] = "";
    add_test(log, sizeof log, 2, "phase.02.preflight",
             "== phase.02.preflight: Preflight (run ab12cd34)\n[FAIL] SBX_SANDBOX is unset\n"
             "[PASS] sbx runs\nFAILED phase.02.preflight in 1 ms: 1 of 8 failed\n"
             "next: phase.02.preflight (Preflight), last failed\n");
    add_test(log, sizeof log, 3, "phase.03.sandbox", "SKIPPED: phase.02 has not passed\n");
    int found = 0;
    char *out = render_shown(log, 1, &found);
    UNIT_CHECK(found == 2, "found %d phases", found);
    says(out, "phase.02.preflight (Preflight): FAILED; its lines are above, where ctest "
              "printed them\n  FAILED phase.02.preflight in 1 ms: 1 of 8 failed\n");
    UNIT_CHECK(!strstr(out, "[FAIL]") && !strstr(out, "[PASS]"), "lines repeated:\n%s", out);
    says(out, "phase.03.sandbox (Sandbox): SKIPPED: phase.02 has not passed\n");
    free(out);
    out = render(log, &found);
    says(out, "phase.02.preflight (Preflight): FAILED\n  [FAIL] SBX_SANDBOX is unset\n");
    free(out);
}

/* What tells the hook that ctest shows failed output itself. */
static void test_failures_shown_by(void)
{
    static const char plain[] = "ctest\0--test-dir\0build\0-R\0phase";
    static const char flag[] = "ctest\0-R\0phase\0--output-on-failure";
    static const char verbose[] = "ctest\0-V\0-R\0phase";
    static const char lookalike[] = "ctest\0-R\0--output-on-failure-not";
    CU_ASSERT_FALSE(ctestview_failures_shown(plain, 5, NULL));
    CU_ASSERT_TRUE(ctestview_failures_shown(flag, 4, NULL));
    CU_ASSERT_TRUE(ctestview_failures_shown(verbose, 4, NULL));
    CU_ASSERT_FALSE(ctestview_failures_shown(lookalike, 3, NULL));
    CU_ASSERT_FALSE(ctestview_failures_shown(flag, 3, NULL)); /* only n strings count */
    CU_ASSERT_FALSE(ctestview_failures_shown(NULL, -1, NULL)); /* unknown: show the lines */
    const char *yes[] = {"1", "ON", "yes", "TRUE", "y", "2"};
    const char *no[] = {"", "0", "OFF", "no", "false", "N", "IGNORE", "NOTFOUND", "x-NOTFOUND"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        UNIT_CHECK(ctestview_failures_shown(plain, 5, yes[i]), "CTEST_OUTPUT_ON_FAILURE=%s",
                   yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        UNIT_CHECK(!ctestview_failures_shown(plain, 5, no[i]), "CTEST_OUTPUT_ON_FAILURE=%s",
                   no[i]);
}

static void test_already_passed_in_one_line(void)
{
    static char log[16384] = "";
    const char *names[] = {"phase.01.start", "phase.02.preflight", "phase.03.sandbox"};
    for (int i = 0; i < 3; i++) {
        char line[160];
        snprintf(line, sizeof line, "%s already passed at 2026-12-02T18:51:2%d.735Z; not "
                 "re-run (--again forces it)\n", names[i], i);
        add_test(log, sizeof log, i + 1, names[i], line);
    }
    add_test(log, sizeof log, 4, "phase.04.launch",
             "phase.04.launch already passed at 2026-12-02T18:51:29.000Z; not re-run\n");
    int found = 0;
    char *out = render(log, &found);
    UNIT_CHECK(found == 4, "found %d", found);
    says(out, "phase.01.start to phase.04.launch (4 phases): already passed in this run");
    UNIT_CHECK(strstr(out, "phase.02.preflight") == NULL, "each phase listed:\n%s", out);
    free(out);
}

/* A phase that printed more than the screen keeps says where the rest is. */
static void test_long_output_capped(void)
{
    static char output[300 * 16 + 1], log[300 * 16 + 2048];
    size_t n = 0;
    for (int i = 1; i <= 300; i++)
        n += (size_t)snprintf(output + n, sizeof output - n, "waiting %d\n", i);
    log[0] = '\0';
    add_test(log, sizeof log, 3, "phase.03.sandbox", output);
    int found = 0;
    char *out = render(log, &found);
    says(out, "  waiting 256\n  (44 more lines: Testing/Temporary/LastTest.log)\n");
    UNIT_CHECK(strstr(out, "waiting 257") == NULL, "line 257 shown");
    free(out);
}

/* ctest -L offline ran no phase: nothing at all is printed. */
static void test_quiet_without_phases(void)
{
    static char log[8192] = "";
    add_test(log, sizeof log, 1, "unit.err", "Run Summary: ...\n");
    add_test(log, sizeof log, 2, "rehearsal.main", "phase.01.start ok\n");
    int found = -1;
    char *out = render(log, &found);
    UNIT_CHECK(found == 0, "found %d phases in an offline run", found);
    UNIT_CHECK(out && out[0] == '\0', "printed: %s", out);
    free(out);
    out = render("", &found);
    UNIT_CHECK(found == 0 && out && !out[0], "an empty log printed: %s", out);
    free(out);
}

const unit_case unit_cases[] = {
    {"phase_lines_shown", test_phase_lines_shown},
    {"already_passed_in_one_line", test_already_passed_in_one_line},
    {"quiet_without_phases", test_quiet_without_phases},
    {"long_output_capped", test_long_output_capped},
    {"failed_lines_not_repeated", test_failed_lines_not_repeated},
    {"failures_shown_by", test_failures_shown_by},
    {NULL, NULL},
};
