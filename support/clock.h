/* clock: wall time, the suspend-aware clock pair, and ISO-8601 text.
 *
 * Every time this suite records is milliseconds since the Unix epoch (UTC)
 * in an int64_t. Time is injectable: code that needs "now" takes a
 * clock_src, so tests can age a run by twelve hours or fake a host sleep
 * without waiting. clock_system() is the real one.
 *
 * The pair: `awake_ms` stops while the host is suspended (Linux
 * CLOCK_MONOTONIC, macOS CLOCK_UPTIME_RAW); `total_ms` keeps counting
 * (Linux CLOCK_BOOTTIME, macOS CLOCK_MONOTONIC_RAW). Their difference grows
 * only while the host sleeps, which is how the sleep checkpoint measures a
 * host sleep without trusting the operator's word. Both restart at boot.
 */
#ifndef SMOKE_CLOCK_H
#define SMOKE_CLOCK_H

#include <stdint.h>

#include "err.h"

typedef struct clock_reading {
    int64_t wall_ms;  /* Unix epoch, UTC */
    int64_t awake_ms; /* stops during suspend */
    int64_t total_ms; /* keeps counting during suspend */
} clock_reading;

/* A source of readings. `read` fills *out; `ud` is passed back untouched. */
typedef struct clock_src {
    void (*read)(void *ud, clock_reading *out);
    void *ud;
} clock_src;

/* The host's clocks. */
clock_src clock_system(void);

/* Convenience: one reading, or just its wall time. `src` NULL = system. */
clock_reading clock_read(const clock_src *src);
int64_t clock_wall_ms(const clock_src *src);

/* Milliseconds from a monotonic clock that never goes back; for measuring
 * durations and deadlines inside one process only. */
int64_t clock_mono_ms(void);

/* Sleeps ms milliseconds, resuming after a signal interrupts it. The one
 * place this suite waits without doing anything. */
void clock_sleep_ms(int64_t ms);

/* How long the host was suspended between two readings of the same boot:
 * (total delta) - (awake delta). Returns -1 when it cannot be known
 * (a reboot in between, or readings out of order). */
int64_t clock_slept_ms(const clock_reading *before, const clock_reading *after);

/* "2026-12-02T11:46:20.123Z" into buf (at least CLOCK_ISO_SZ bytes); returns
 * buf. Times outside the years 0000-9999 are clamped to them. */
#define CLOCK_ISO_SZ 32
char *clock_format_iso(int64_t wall_ms, char *buf);

/* Parses ISO-8601 UTC ("...Z", optional fraction, optional "+00:00", a
 * missing zone is taken as UTC) and Python logging's asctime
 * ("2026-08-12 10:59:30,109", taken as UTC). Other "+hh:mm" offsets are
 * converted to UTC; digits past milliseconds are cut. ERR_CORRUPT if it is
 * neither (then *wall_ms is untouched); ERR_USAGE for NULL arguments. */
err_code clock_parse_iso(const char *text, int64_t *wall_ms);

/* "850 ms", "1.2 s", "3 min 4 s", "2 h 5 min": short human durations for
 * reports, rounded to the unit shown; a negative ms is "unknown". */
#define CLOCK_DUR_SZ 32
char *clock_format_duration(int64_t ms, char *buf);

#endif
