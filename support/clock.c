/* clock: readings, sleep arithmetic and ISO-8601 text.
 *
 * Calendar arithmetic is done here rather than with timegm() (not POSIX)
 * or gmtime_r() (bounded by time_t): days_from_civil / civil_from_days are
 * Howard Hinnant's proleptic Gregorian algorithms, exact for any int64 ms.
 */
#include "clock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "platform.h"

#define MS_PER_SEC 1000LL
#define MS_PER_MIN (60 * MS_PER_SEC)
#define MS_PER_HOUR (60 * MS_PER_MIN)
#define MS_PER_DAY (24 * MS_PER_HOUR)

static void system_read(void *ud, clock_reading *out)
{
    (void)ud;
    struct timespec ts = {0, 0};
    clock_gettime(CLOCK_REALTIME, &ts);
    out->wall_ms = (int64_t)ts.tv_sec * MS_PER_SEC + ts.tv_nsec / 1000000;
    out->awake_ms = plat_awake_ms();
    out->total_ms = plat_total_ms();
}

clock_src clock_system(void)
{
    clock_src src = {system_read, NULL};
    return src;
}

clock_reading clock_read(const clock_src *src)
{
    clock_reading r = {0, 0, 0};
    if (src && src->read)
        src->read(src->ud, &r);
    else
        system_read(NULL, &r);
    return r;
}

int64_t clock_wall_ms(const clock_src *src)
{
    return clock_read(src).wall_ms;
}

int64_t clock_mono_ms(void)
{
    struct timespec ts = {0, 0};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * MS_PER_SEC + ts.tv_nsec / 1000000;
}

int64_t clock_slept_ms(const clock_reading *before, const clock_reading *after)
{
    if (!before || !after)
        return -1;
    int64_t total = after->total_ms - before->total_ms;
    int64_t awake = after->awake_ms - before->awake_ms;
    /* Both clocks restart at boot, so either one going back means the
     * readings come from different boots (or were swapped). */
    if (total < 0 || awake < 0)
        return -1;
    /* The two clocks are read a few microseconds apart, so an awake host
     * can show awake a hair ahead of total: that is zero sleep, not -1. */
    return total > awake ? total - awake : 0;
}

/* ---- calendar ---------------------------------------------------------- */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Days since 1970-01-01 of y-m-d (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = floor_div(y, 400);
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = floor_div(z, 146097);
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static int days_in_month(int64_t y, int m)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : days[m - 1];
}

/* ISO-8601 has four-digit years; no run of this suite lives outside them. */
#define ISO_MIN_MS (-62167219200000LL) /* 0000-01-01T00:00:00.000Z */
#define ISO_MAX_MS 253402300799999LL   /* 9999-12-31T23:59:59.999Z */

char *clock_format_iso(int64_t wall_ms, char *buf)
{
    if (wall_ms < ISO_MIN_MS)
        wall_ms = ISO_MIN_MS;
    if (wall_ms > ISO_MAX_MS)
        wall_ms = ISO_MAX_MS;
    int64_t day = floor_div(wall_ms, MS_PER_DAY);
    int64_t in_day = wall_ms - day * MS_PER_DAY;
    int64_t y;
    int m, d;
    civil_from_days(day, &y, &m, &d);
    /* The compiler cannot see the clamped ranges, so format into room it
     * can prove enough, then copy the 24 bytes that are really there. */
    char text[80];
    int n = snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                     (int)y, m, d, (int)(in_day / MS_PER_HOUR),
                     (int)(in_day / MS_PER_MIN % 60),
                     (int)(in_day / MS_PER_SEC % 60), (int)(in_day % MS_PER_SEC));
    size_t len = n < 0 ? 0 : (size_t)n < CLOCK_ISO_SZ ? (size_t)n : CLOCK_ISO_SZ - 1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    return buf;
}

/* ---- parsing ----------------------------------------------------------- */

/* Reads exactly `n` digits at *p (stopping at the NUL, never past it). */
static int take_digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return 0;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return 1;
}

static int take_char(const char **p, const char *allowed)
{
    if (**p == '\0')
        return 0;
    for (; *allowed; allowed++) {
        if (**p == *allowed) {
            (*p)++;
            return 1;
        }
    }
    return 0;
}

/* ".123" or ",109" (Python asctime); digits past milliseconds are cut. */
static int take_fraction(const char **p, int *ms)
{
    *ms = 0;
    if (!take_char(p, ".,"))
        return 1;
    int digits = 0;
    while (**p >= '0' && **p <= '9') {
        if (digits < 3)
            *ms = *ms * 10 + (**p - '0');
        digits++;
        (*p)++;
    }
    for (int i = digits; i < 3; i++)
        *ms *= 10;
    return digits > 0;
}

/* "Z", "+00:00", "+0000", "-05:30", or nothing (UTC). */
static int take_zone(const char **p, int64_t *offset_ms)
{
    *offset_ms = 0;
    if (**p == '\0' || take_char(p, "Zz"))
        return 1;
    int sign = **p == '-' ? -1 : 1;
    int hh, mm;
    if (!take_char(p, "+-") || !take_digits(p, 2, &hh))
        return 0;
    take_char(p, ":");
    if (!take_digits(p, 2, &mm) || hh > 23 || mm > 59)
        return 0;
    *offset_ms = sign * (hh * MS_PER_HOUR + mm * MS_PER_MIN);
    return 1;
}

err_code clock_parse_iso(const char *text, int64_t *wall_ms)
{
    if (!text || !wall_ms)
        return ERR_USAGE;
    const char *p = text;
    int y, mo, d, h, mi, s, ms;
    int64_t offset;
    int ok = take_digits(&p, 4, &y) && take_char(&p, "-") &&
             take_digits(&p, 2, &mo) && take_char(&p, "-") &&
             take_digits(&p, 2, &d) && take_char(&p, "Tt ") &&
             take_digits(&p, 2, &h) && take_char(&p, ":") &&
             take_digits(&p, 2, &mi) && take_char(&p, ":") &&
             take_digits(&p, 2, &s) && take_fraction(&p, &ms) &&
             take_zone(&p, &offset) && *p == '\0';
    if (!ok || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) ||
        h > 23 || mi > 59 || s > 59)
        return ERR_CORRUPT;
    *wall_ms = days_from_civil(y, mo, d) * MS_PER_DAY + h * MS_PER_HOUR +
               mi * MS_PER_MIN + s * MS_PER_SEC + ms - offset;
    return ERR_OK;
}

/* ---- durations --------------------------------------------------------- */

/* n / unit rounded half up, without the overflow of (n + unit / 2) / unit. */
static int64_t round_div(int64_t n, int64_t unit)
{
    return n / unit + (n % unit >= unit / 2);
}

char *clock_format_duration(int64_t ms, char *buf)
{
    if (ms < 0) {
        snprintf(buf, CLOCK_DUR_SZ, "unknown");
    } else if (ms < MS_PER_SEC) {
        snprintf(buf, CLOCK_DUR_SZ, "%lld ms", (long long)ms);
    } else if (round_div(ms, 100) < 600) {
        int64_t tenths = round_div(ms, 100);
        snprintf(buf, CLOCK_DUR_SZ, "%lld.%lld s", (long long)(tenths / 10),
                 (long long)(tenths % 10));
    } else if (round_div(ms, MS_PER_SEC) < 3600) {
        int64_t secs = round_div(ms, MS_PER_SEC);
        if (secs % 60)
            snprintf(buf, CLOCK_DUR_SZ, "%lld min %lld s",
                     (long long)(secs / 60), (long long)(secs % 60));
        else
            snprintf(buf, CLOCK_DUR_SZ, "%lld min", (long long)(secs / 60));
    } else {
        int64_t mins = round_div(ms, MS_PER_MIN);
        if (mins % 60)
            snprintf(buf, CLOCK_DUR_SZ, "%lld h %lld min",
                     (long long)(mins / 60), (long long)(mins % 60));
        else
            snprintf(buf, CLOCK_DUR_SZ, "%lld h", (long long)(mins / 60));
    }
    return buf;
}

void clock_sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}
