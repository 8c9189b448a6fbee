#include "progress.h"

#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "redact.h"

void progress_begin(progress *pg, FILE *fp, const char *what, int64_t timeout_ms)
{
    memset(pg, 0, sizeof *pg);
    pg->fp = fp ? fp : stdout;
    snprintf(pg->what, sizeof pg->what, "%s", what);
    pg->start_ms = clock_mono_ms();
    pg->deadline_ms = pg->start_ms + (timeout_ms > 0 ? timeout_ms : 0);
    pg->last_print_ms = pg->start_ms;
    pg->live = isatty(fileno(pg->fp));
}

int64_t progress_elapsed_ms(const progress *pg)
{
    return clock_mono_ms() - pg->start_ms;
}

int64_t progress_left_ms(const progress *pg)
{
    int64_t left = pg->deadline_ms - clock_mono_ms();
    return left > 0 ? left : 0;
}

int progress_expired(const progress *pg)
{
    return clock_mono_ms() >= pg->deadline_ms;
}

static void show(progress *pg, int64_t now)
{
    char elapsed[CLOCK_DUR_SZ], total[CLOCK_DUR_SZ];
    clock_format_duration(now - pg->start_ms, elapsed);
    clock_format_duration(pg->deadline_ms - pg->start_ms, total);
    if (pg->live)
        redact_fprintf(pg->fp, "\r\033[Kwaiting for %s: %s elapsed, deadline %s",
                       pg->what, elapsed, total);
    else
        redact_fprintf(pg->fp, "waiting for %s: %s elapsed, deadline %s\n",
                       pg->what, elapsed, total);
    fflush(pg->fp);
    pg->printed = 1;
    pg->last_print_ms = now;
}

void progress_tick(progress *pg)
{
    int64_t now = clock_mono_ms();
    if (now - pg->start_ms < PROGRESS_QUIET_MS)
        return;
    int64_t every = pg->live ? 250 : PROGRESS_PLAIN_EVERY_MS;
    if (!pg->printed || now - pg->last_print_ms >= every)
        show(pg, now);
}

void progress_end(progress *pg, const char *outcome)
{
    int64_t elapsed = progress_elapsed_ms(pg);
    if (pg->live && pg->printed)
        fputs("\r\033[K", pg->fp);
    if (outcome && (pg->printed || elapsed >= PROGRESS_QUIET_MS)) {
        char took[CLOCK_DUR_SZ];
        clock_format_duration(elapsed, took);
        redact_fprintf(pg->fp, "%s: %s after %s\n", pg->what, outcome, took);
    }
    fflush(pg->fp);
    pg->printed = 0;
}
