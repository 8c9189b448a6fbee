#include "phx_backoff.h"

phx_backoff phx_backoff_default(void)
{
    return (phx_backoff){.base_ms = 500, .cap_ms = 30000, .jitter = 0.5,
                         .restart_min_ms = 1000, .restart_max_ms = 5000,
                         .later_min_ms = 30000, .later_max_ms = 60000, .stable_ms = 60000};
}

phx_close_kind phx_close_classify(int code)
{
    if (code == 1000 || code == 1001)
        return PHX_CLOSE_FINAL;
    if (code == 1008)
        return PHX_CLOSE_TERMINAL;
    return PHX_CLOSE_RETRY;
}

static double clamp01(double v)
{
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* U(min, max) from draw u; nonsense bounds clamp (negative = 0, max < min = min). */
static double floor_between(int min_ms, int max_ms, double u)
{
    double lo = min_ms > 0 ? min_ms : 0;
    double hi = max_ms > lo ? max_ms : lo;
    return lo + clamp01(u) * (hi - lo);
}

int64_t phx_backoff_delay_ms(const phx_backoff *policy, unsigned attempt, int code,
                             double u1, double u2)
{
    double base = policy->base_ms > 0 ? policy->base_ms : 0;
    double cap = policy->cap_ms > 0 ? policy->cap_ms : 0;
    double jitter = clamp01(policy->jitter);
    double d = base;
    /* doubling stops at the cap, so a huge attempt count cannot overflow */
    for (unsigned i = 0; i < attempt && d < cap; i++)
        d *= 2;
    if (d > cap)
        d = cap;
    double delay = d * (1 - jitter) + clamp01(u1) * d * jitter;
    double floor = 0;
    if (code == 1012)
        floor = floor_between(policy->restart_min_ms, policy->restart_max_ms, u2);
    else if (code == 1013)
        floor = floor_between(policy->later_min_ms, policy->later_max_ms, u2);
    return (int64_t)(delay > floor ? delay : floor);
}
