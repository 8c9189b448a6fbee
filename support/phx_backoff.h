/* phx_backoff: what a lost Phoenix connection means, and how long to wait.
 *
 * The SDK's reconnect policy (band-protocol.md section 8.2), as pure
 * functions a test can pin down: the caller supplies the uniform random
 * draws, so the same inputs always give the same delay.
 *
 * Close codes: 1000/1001 end the session normally (no reconnect), 1008 is
 * a terminal policy violation (no reconnect), everything else -- no close
 * frame at all (TCP loss, code 0 here), 1011, 1012, 1013, any other -- is
 * worth a reconnect.
 *
 * Delay for the n-th consecutive attempt (n from 0):
 *   d = min(cap, base * 2^n)
 *   jittered = d * (1 - jitter) + u1 * d * jitter    (jitter 0.5 = the SDK's
 *                                                      "equal jitter")
 *   then raised to a floor for 1012 (U(1,5) s, server restart) and 1013
 *   (U(30,60) s, try again later), drawn with u2. The floors are policy
 *   fields like the rest, so a test can run the same policy compressed;
 *   phx_backoff_default() holds the SDK's numbers.
 * The SDK's rapid-disconnect hold-down (2 s / 10 s / cooldown minimums
 * after repeated disconnects within 60 s) is not modelled.
 */
#ifndef SMOKE_PHX_BACKOFF_H
#define SMOKE_PHX_BACKOFF_H

#include <stdint.h>

typedef enum phx_close_kind {
    PHX_CLOSE_RETRY,    /* reconnect after a delay */
    PHX_CLOSE_FINAL,    /* 1000/1001: the server ended the session; stop */
    PHX_CLOSE_TERMINAL, /* 1008: refused for good; stop and report */
} phx_close_kind;

typedef struct phx_backoff {
    int base_ms;   /* first delay before jitter; SDK 500 */
    int cap_ms;    /* largest delay before the close-code floor; SDK 30000 */
    double jitter; /* 0..1: share of the delay that is random; SDK 0.5 */
    int restart_min_ms, restart_max_ms; /* 1012 floor U(min, max); SDK 1000, 5000 */
    int later_min_ms, later_max_ms;     /* 1013 floor U(min, max); SDK 30000, 60000 */
    int stable_ms; /* a connection that lived this long restarts the attempt
                      count (phoenix.h, Reconnect); SDK 60000 */
} phx_backoff;

/* The SDK's defaults. A policy built field by field starts from these:
 * a floor left at 0 is no floor. */
phx_backoff phx_backoff_default(void);

/* How to treat a lost connection whose close frame carried `code`
 * (0 = no close frame). */
phx_close_kind phx_close_classify(int code);

/* The delay before attempt `attempt` (0 = first) after a loss with close
 * code `code`. u1, u2 are uniform draws in [0, 1); values outside are
 * clamped. Out-of-range policy fields are clamped too (a negative base is
 * 0, a jitter above 1 is 1, a floor's max below its min is its min), so the
 * result is always in [0, the largest of cap and the floors' max]. */
int64_t phx_backoff_delay_ms(const phx_backoff *policy, unsigned attempt, int code,
                             double u1, double u2);

#endif
