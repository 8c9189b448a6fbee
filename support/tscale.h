/* tscale: one knob that compresses protocol time for rehearsals and tests.
 *
 * The SDK's connection policy is a set of real durations (WS keepalive
 * 20 s / 20 s, heartbeat 30 s, reconnect delays, the platform's heartbeat
 * timeout). A rehearsal that waited for them at full length would take
 * minutes, and one that used other numbers would prove nothing about them.
 * So every such duration is written as its real value and passed through
 * tscale_ms() where it is used: SMOKE_TIME_SCALE=0.1 runs the same logic ten
 * times faster, and all durations keep their proportions.
 *
 * SMOKE_TIME_SCALE is a decimal in (0, 1]; unset, empty or invalid means 1
 * (real time). Operators never set it: a staging run at any other scale
 * would not be the SDK's behaviour. The fakes, the stand-in agent and the
 * rehearsal honour it; tscale_parse lets a command refuse a bad value
 * loudly instead of silently running at real time.
 */
#ifndef SMOKE_TSCALE_H
#define SMOKE_TSCALE_H

#include <stdint.h>

#include "err.h"

#define TSCALE_ENV "SMOKE_TIME_SCALE"

/* Parses text as a scale in (0, 1]. ERR_CONFIG (message names
 * SMOKE_TIME_SCALE and the text) when it is not one. */
err_code tscale_parse(const char *text, double *out, char *err);

/* The scale from the environment: 1 when unset, empty or invalid. */
double tscale_factor(void);

/* real_ms scaled by the environment's factor; a positive duration never
 * scales below 1 ms, and 0 or a negative value is returned unchanged. */
int64_t tscale_ms(int64_t real_ms);

/* The same with an explicit factor (no environment read), for callers that
 * parsed the scale once. */
int64_t tscale_apply(int64_t real_ms, double factor);

#endif
