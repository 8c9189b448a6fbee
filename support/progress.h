/* progress: how a long wait shows itself to the operator.
 *
 * Design rule: every wait longer than 2 s says what it waits for, the time
 * elapsed and the deadline. On a terminal that is one live line rewritten
 * in place; otherwise (ctest captures output, an AI client reads a log) a
 * plain line every PROGRESS_PLAIN_EVERY_MS. Nothing is printed for waits
 * that end within PROGRESS_QUIET_MS.
 *
 *   progress pg;
 *   progress_begin(&pg, stdout, "the agent's readiness line", deadline_ms);
 *   while (!ready && !progress_expired(&pg)) { ...; progress_tick(&pg); }
 *   progress_end(&pg, ready ? "ready" : "timed out");
 *
 * A progress value is plain data owned by the caller; it holds the FILE*
 * it was given and never closes it. Text passes through redact.
 */
#ifndef SMOKE_PROGRESS_H
#define SMOKE_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

#define PROGRESS_QUIET_MS 2000
#define PROGRESS_PLAIN_EVERY_MS 5000

typedef struct progress {
    FILE *fp;
    char what[160];
    int64_t start_ms;    /* clock_mono_ms() at begin */
    int64_t deadline_ms; /* clock_mono_ms() at which the wait gives up */
    int64_t last_print_ms;
    int live;            /* fp is a terminal: rewrite one line */
    int printed;         /* something was shown, so end must close it */
} progress;

/* Starts a wait of `timeout_ms` for `what`. fp NULL = stdout. */
void progress_begin(progress *pg, FILE *fp, const char *what, int64_t timeout_ms);

/* Shows the wait when due. Cheap enough to call every loop iteration. */
void progress_tick(progress *pg);

/* True once the deadline has passed. */
int progress_expired(const progress *pg);

/* Milliseconds left before the deadline (0 when expired) and elapsed. */
int64_t progress_left_ms(const progress *pg);
int64_t progress_elapsed_ms(const progress *pg);

/* Ends the wait; prints "<what>: <outcome> after <elapsed>" when the wait
 * was shown (or when outcome is not NULL and the wait took over 2 s). */
void progress_end(progress *pg, const char *outcome);

#endif
