/* clock and platform: ISO text both ways, sleep arithmetic, durations, the
 * host's clocks, and process identity. */
#include "clock.h"
#include "platform.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct iso_case {
    int64_t ms;
    const char *text;
} iso_case;

/* Values checked against Python's datetime, independent of this code. */
static const iso_case known[] = {
    {0, "1970-01-01T00:00:00.000Z"},
    {-1, "1969-12-31T23:59:59.999Z"},
    {951827696789LL, "2000-02-29T12:34:56.789Z"},   /* 400-year leap */
    {1709251199999LL, "2024-02-29T23:59:59.999Z"},  /* ordinary leap */
    {1786532370109LL, "2026-08-12T10:59:30.109Z"},
    {1796211980123LL, "2026-12-02T11:46:20.123Z"},
    {4102444799999LL, "2099-12-31T23:59:59.999Z"},
    {4102444800000LL, "2100-01-01T00:00:00.000Z"},  /* 2100: not leap */
    {-2203891200000LL, "1900-03-01T00:00:00.000Z"}, /* 1900: not leap */
};

static void test_iso_known_values(void)
{
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        char buf[CLOCK_ISO_SZ];
        clock_format_iso(known[i].ms, buf);
        UNIT_CHECK(strcmp(buf, known[i].text) == 0, "format %lld: got %s, want %s",
                   (long long)known[i].ms, buf, known[i].text);
        int64_t back = 12345;
        err_code rc = clock_parse_iso(known[i].text, &back);
        UNIT_CHECK(rc == ERR_OK && back == known[i].ms, "parse %s: rc %d, got %lld",
                   known[i].text, rc, (long long)back);
    }
}

/* Every day from 1970 to 2100 agrees with the C library's gmtime_r, and
 * survives a format/parse round trip. */
static void test_iso_agrees_with_gmtime_1970_to_2100(void)
{
    int bad = 0;
    for (int64_t ms = 0; ms <= 4102444800000LL && bad < 5; ms += 86400000LL + 3723001) {
        char buf[CLOCK_ISO_SZ];
        clock_format_iso(ms, buf);
        time_t secs = (time_t)(ms / 1000);
        struct tm tm;
        char want[64];
        gmtime_r(&secs, &tm);
        snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
        int64_t back = -1;
        if (strcmp(buf, want) != 0 || clock_parse_iso(buf, &back) != ERR_OK || back != ms) {
            bad++;
            UNIT_CHECK(0, "%lld: formatted %s, gmtime says %s, parsed back %lld",
                       (long long)ms, buf, want, (long long)back);
        }
    }
    UNIT_CHECK(bad == 0, "%d mismatches", bad);
}

static void test_iso_clamps_outside_four_digit_years(void)
{
    char buf[CLOCK_ISO_SZ];
    CU_ASSERT_STRING_EQUAL(clock_format_iso(INT64_MAX, buf), "9999-12-31T23:59:59.999Z");
    CU_ASSERT_STRING_EQUAL(clock_format_iso(INT64_MIN, buf), "0000-01-01T00:00:00.000Z");
}

typedef struct parse_case {
    const char *text;
    int64_t ms;
} parse_case;

static void test_parse_accepts_zones_fractions_and_asctime(void)
{
    const int64_t base = 1786532370000LL; /* 2026-08-12T10:59:30Z */
    static const parse_case cases[] = {
        {"2026-08-12T10:59:30Z", 0},
        {"2026-08-12T10:59:30.109Z", 109},
        {"2026-08-12T10:59:30.1Z", 100},
        {"2026-08-12T10:59:30.10987654Z", 109}, /* cut, not rounded */
        {"2026-08-12T10:59:30.109+00:00", 109},
        {"2026-08-12T10:59:30.109-00:00", 109},
        {"2026-08-12T10:59:30+0000", 0},
        {"2026-08-12T10:59:30.109", 109}, /* no zone: UTC */
        {"2026-08-12t10:59:30z", 0},
        {"2026-08-12 10:59:30,109", 109}, /* Python logging asctime */
        {"2026-08-12T12:59:30+02:00", 0},
        {"2026-08-12T05:29:30-05:30", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t got = 0;
        err_code rc = clock_parse_iso(cases[i].text, &got);
        UNIT_CHECK(rc == ERR_OK && got == base + cases[i].ms, "%s: rc %d, off by %lld ms",
                   cases[i].text, rc, (long long)(got - base - cases[i].ms));
    }
}

static void test_parse_rejects_garbage(void)
{
    static const char *const bad[] = {
        "", "2026", "garbage", "2026-08-12", "2026-08-12T10:59",
        "2026-13-01T00:00:00Z", "2026-00-10T00:00:00Z", "2026-02-29T00:00:00Z",
        "2100-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2026-04-31T00:00:00Z",
        "2026-01-00T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:60:00Z",
        "2026-01-01T00:00:60Z", "2026-01-01T00:00:00.Z", "2026-01-01T00:00:00Zjunk",
        "2026-01-01T00:00:00 ", " 2026-01-01T00:00:00", "2026-1-01T00:00:00Z",
        "2026/01/01T00:00:00Z", "2026-01-01X00:00:00Z", "2026-01-01T00:00:00+5",
        "2026-01-01T00:00:00+24:00", "2026-01-01T00:00:00+01:60", "+026-01-01T00:00:00Z",
        "2026-01-01T00:00:00,", "2026-01-01T0a:00:00Z",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t got = 777;
        err_code rc = clock_parse_iso(bad[i], &got);
        UNIT_CHECK(rc == ERR_CORRUPT && got == 777, "\"%s\" accepted (rc %d, %lld)", bad[i],
                   rc, (long long)got);
    }
    int64_t got;
    CU_ASSERT_EQUAL(clock_parse_iso(NULL, &got), ERR_USAGE);
    CU_ASSERT_EQUAL(clock_parse_iso("2026-01-01T00:00:00Z", NULL), ERR_USAGE);
}

/* Each prefix sits in a buffer of exactly its size, so AddressSanitizer
 * catches any read past the terminating NUL. */
static void test_parse_never_reads_past_the_string(void)
{
    const char *full = "2026-08-12T10:59:30.109+00:00";
    size_t n = strlen(full);
    for (size_t len = 0; len <= n; len++) {
        char *text = malloc(len + 1);
        if (!text)
            return;
        memcpy(text, full, len);
        text[len] = '\0';
        int64_t got = 0;
        err_code rc = clock_parse_iso(text, &got);
        /* Complete: "...:30", "...:30.1" to "...:30.109", and the whole. */
        int complete = len == 19 || (len >= 21 && len <= 23) || len == n;
        UNIT_CHECK(rc == (complete ? ERR_OK : ERR_CORRUPT), "prefix %zu \"%s\": rc %d", len,
                   text, rc);
        free(text);
    }
}

static void test_slept_is_total_minus_awake(void)
{
    clock_reading before = {1000000, 5000, 9000};
    clock_reading after = {1060000, 25000, 69000}; /* 60 s, 20 s awake */
    CU_ASSERT_EQUAL(clock_slept_ms(&before, &after), 40000);
    CU_ASSERT_EQUAL(clock_slept_ms(&before, &before), 0);

    clock_reading jitter = {1000100, 5101, 9100}; /* awake read a bit later */
    CU_ASSERT_EQUAL(clock_slept_ms(&before, &jitter), 0);
}

static void test_slept_is_unknown_across_a_reboot(void)
{
    clock_reading before = {1000000, 500000, 900000};
    clock_reading rebooted = {1600000, 30000, 31000}; /* both restarted */
    clock_reading awake_back = {1600000, 400000, 990000};
    clock_reading total_back = {1600000, 510000, 800000};
    CU_ASSERT_EQUAL(clock_slept_ms(&before, &rebooted), -1);
    CU_ASSERT_EQUAL(clock_slept_ms(&before, &awake_back), -1);
    CU_ASSERT_EQUAL(clock_slept_ms(&before, &total_back), -1);
    CU_ASSERT_EQUAL(clock_slept_ms(NULL, &before), -1);
    CU_ASSERT_EQUAL(clock_slept_ms(&before, NULL), -1);
}

static void test_duration_text(void)
{
    static const struct {
        int64_t ms;
        const char *text;
    } cases[] = {
        {0, "0 ms"},
        {850, "850 ms"},
        {999, "999 ms"},
        {1000, "1.0 s"},
        {1234, "1.2 s"},
        {1250, "1.3 s"},
        {59949, "59.9 s"},
        {59950, "1 min"},
        {184000, "3 min 4 s"},
        {184499, "3 min 4 s"},
        {184500, "3 min 5 s"},
        {3599499, "59 min 59 s"},
        {3599500, "1 h"},
        {7500000, "2 h 5 min"},
        {90000000, "25 h"},
        {-1, "unknown"},
        {INT64_MAX, "2562047788015 h 13 min"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[CLOCK_DUR_SZ];
        clock_format_duration(cases[i].ms, buf);
        UNIT_CHECK(strcmp(buf, cases[i].text) == 0, "%lld ms: got \"%s\", want \"%s\"",
                   (long long)cases[i].ms, buf, cases[i].text);
    }
}

static void fixed_read(void *ud, clock_reading *out)
{
    *out = *(const clock_reading *)ud;
}

static void test_injected_source_is_used(void)
{
    clock_reading fake = {1796211980123LL, 42, 4242};
    clock_src src = {fixed_read, &fake};
    clock_reading r = clock_read(&src);
    CU_ASSERT_EQUAL(r.wall_ms, fake.wall_ms);
    CU_ASSERT_EQUAL(r.awake_ms, 42);
    CU_ASSERT_EQUAL(r.total_ms, 4242);
    CU_ASSERT_EQUAL(clock_wall_ms(&src), fake.wall_ms);
}

static void test_system_clocks_are_sane(void)
{
    clock_src sys = clock_system();
    clock_reading a = clock_read(&sys);
    int64_t mono_a = clock_mono_ms();
    struct timespec nap = {0, 30 * 1000000};
    nanosleep(&nap, NULL);
    clock_reading b = clock_read(NULL);
    int64_t mono_b = clock_mono_ms();

    int64_t now = (int64_t)time(NULL) * 1000;
    UNIT_CHECK(b.wall_ms > now - 5000 && b.wall_ms < now + 5000, "wall %lld vs time() %lld",
               (long long)b.wall_ms, (long long)now);
    UNIT_CHECK(a.awake_ms > 0 && a.awake_ms <= a.total_ms + 1, "awake %lld total %lld",
               (long long)a.awake_ms, (long long)a.total_ms);
    UNIT_CHECK(b.awake_ms - a.awake_ms >= 29, "awake advanced %lld ms over a 30 ms nap",
               (long long)(b.awake_ms - a.awake_ms));
    UNIT_CHECK(b.total_ms - a.total_ms >= b.awake_ms - a.awake_ms - 1,
               "total advanced %lld, awake %lld", (long long)(b.total_ms - a.total_ms),
               (long long)(b.awake_ms - a.awake_ms));
    int64_t slept = clock_slept_ms(&a, &b);
    UNIT_CHECK(slept >= 0 && slept < 1000, "a 30 ms nap measured as %lld ms of sleep",
               (long long)slept);
    UNIT_CHECK(mono_b - mono_a >= 29, "mono advanced %lld ms", (long long)(mono_b - mono_a));
}

static void test_process_identity(void)
{
    uint64_t self = plat_proc_start_token(getpid());
    CU_ASSERT_NOT_EQUAL(self, 0);
    CU_ASSERT_EQUAL(plat_proc_start_token(getpid()), self);
    CU_ASSERT_TRUE(plat_proc_alive(getpid(), self));
    CU_ASSERT_FALSE(plat_proc_alive(getpid(), self + 1)); /* a reused pid */
    CU_ASSERT_FALSE(plat_proc_alive(getpid(), 0));
    CU_ASSERT_EQUAL(plat_proc_start_token(0), 0);
    CU_ASSERT_EQUAL(plat_proc_start_token(-5), 0);
    CU_ASSERT_FALSE(plat_proc_alive(-5, self));
}

/* An exited, unreaped child is a zombie: it has a token but is not alive;
 * once reaped it has neither. */
static void test_zombie_is_not_alive(void)
{
    int ready[2];
    if (!UNIT_CHECK(pipe(ready) == 0, "pipe"))
        return;
    pid_t child = fork();
    if (child == 0) {
        char c;
        close(ready[1]);
        _exit(read(ready[0], &c, 1) == 1 ? 0 : 3); /* wait for the go */
    }
    if (!UNIT_CHECK(child > 0, "fork"))
        return;
    close(ready[0]);
    uint64_t token = plat_proc_start_token(child);
    UNIT_CHECK(token != 0 && plat_proc_alive(child, token), "running child %lld: token %llu",
               (long long)child, (unsigned long long)token);
    UNIT_CHECK(write(ready[1], "x", 1) == 1, "cannot tell the child to exit");
    close(ready[1]);

    int alive = 1;
    for (int i = 0; i < 200 && alive; i++) { /* up to 2 s for it to exit */
        struct timespec nap = {0, 10 * 1000000};
        nanosleep(&nap, NULL);
        alive = plat_proc_alive(child, token);
    }
    UNIT_CHECK(!alive, "exited child still counts as alive");
    int status = -1;
    waitpid(child, &status, 0);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_EQUAL(plat_proc_start_token(child), 0);
    CU_ASSERT_FALSE(plat_proc_alive(child, token));
}

/* A child reads its parent's argv: this test's own (Linux: compared with
 * /proc/self/cmdline, which is what the product reads from the child). */
static void test_parent_argv(void)
{
    char mine[8192];
    FILE *fp = fopen("/proc/self/cmdline", "rb");
    size_t len = fp ? fread(mine, 1, sizeof mine, fp) : 0;
    if (fp)
        fclose(fp);
    if (!UNIT_CHECK(len > 0 && len < sizeof mine, "read /proc/self/cmdline"))
        return;
    int strings = 0;
    for (size_t i = 0; i < len; i++)
        strings += mine[i] == '\0';
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        char got[8192];
        int n = plat_parent_argv(got, sizeof got);
        _exit(n == strings && memcmp(got, mine, len) == 0 ? 0 : 1);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    UNIT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
               "the child read its parent's %d arguments (status %d)", strings, status);

    char small[6];
    int n = plat_parent_argv(small, sizeof small); /* cut short: still strings */
    UNIT_CHECK(n >= 1 && small[strlen(small)] == '\0' && strlen(small) < sizeof small,
               "a cut argv ends as a string (%d)", n);
    CU_ASSERT_EQUAL(plat_parent_argv(small, 1), -1);
}

const unit_case unit_cases[] = {
    {"iso_known_values", test_iso_known_values},
    {"iso_agrees_with_gmtime_1970_to_2100", test_iso_agrees_with_gmtime_1970_to_2100},
    {"iso_clamps_outside_four_digit_years", test_iso_clamps_outside_four_digit_years},
    {"parse_accepts_zones_fractions_and_asctime", test_parse_accepts_zones_fractions_and_asctime},
    {"parse_rejects_garbage", test_parse_rejects_garbage},
    {"parse_never_reads_past_the_string", test_parse_never_reads_past_the_string},
    {"slept_is_total_minus_awake", test_slept_is_total_minus_awake},
    {"slept_is_unknown_across_a_reboot", test_slept_is_unknown_across_a_reboot},
    {"duration_text", test_duration_text},
    {"injected_source_is_used", test_injected_source_is_used},
    {"system_clocks_are_sane", test_system_clocks_are_sane},
    {"process_identity", test_process_identity},
    {"zombie_is_not_alive", test_zombie_is_not_alive},
    {"parent_argv", test_parent_argv},
    {NULL, NULL},
};
