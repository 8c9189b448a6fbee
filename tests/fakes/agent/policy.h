/* policy: the SDK's reconnect policy (band-protocol.md section 8), for the
 * stand-in's WebSocket; phoenix asks it for each delay (retry_delay hook).
 *
 * Every duration is the SDK's real value passed through tscale_ms, so the
 * rehearsal's SMOKE_TIME_SCALE compresses the whole policy at once.
 *
 * Initial connect (no connection yet, 8.1): equal_jitter(min(30, 0.5*2^n))
 * where equal_jitter(d) = d/2 + U*d/2.
 * After an established connection drops (8.2): a connection that lived
 * 60 s or more resets the attempt count and the rapid history; one that
 * lived under 5 s (a failed attempt counts as uptime 0) is a rapid
 * disconnect, remembered for 60 s. delay = max(min(30, 0.5*2^attempt),
 * rapid minimum) with rapid minimums 2 s (1st), 10 s (2nd) and
 * min(60 + 30*(n-3), 300) s from the 3rd; equal jitter under 3 rapid
 * disconnects, hold-down jitter x[0.25, 1] from 3 on. Close code 1012
 * raises the delay to at least U(1,5) s, 1013 to U(30,60) s (phoenix
 * already applies those floors to the suggested delay; kept here).
 * Not modelled: the suppression after 10 rapid disconnects in 60 s (the
 * hold-down makes it unreachable in any rehearsal).
 */
#ifndef FAKE_AGENT_POLICY_H
#define FAKE_AGENT_POLICY_H

#include <stdint.h>

#define POLICY_RAPID_MAX 16

typedef struct policy {
    unsigned initial_attempt;          /* failed attempts of the initial connect */
    unsigned attempt;                  /* after the first drop */
    int64_t rapid_at[POLICY_RAPID_MAX]; /* monotonic ms of recent rapid disconnects */
    int nrapid;
    unsigned seed;                     /* for the jitter draws */
} policy;

/* A fresh policy; seed feeds the jitter. */
void policy_init(policy *p, unsigned seed);

/* The delay in ms before the next attempt (see above). now_ms is a
 * monotonic clock reading; the other arguments are phoenix's. */
int64_t policy_delay(policy *p, int64_t now_ms, unsigned generation, int code, int64_t uptime_ms,
                     int64_t suggested_ms);

/* phoenix's retry_delay hook; ud is a policy. */
int64_t policy_retry_delay(void *ud, unsigned generation, int code, int64_t uptime_ms,
                           int64_t suggested_ms);

#endif
