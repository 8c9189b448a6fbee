#include "policy.h"

#include <stdlib.h>

#include "clock.h"
#include "tscale.h"

#define BASE_MS 500
#define CAP_MS 30000
#define STABLE_MS 60000
#define RAPID_UPTIME_MS 5000
#define RAPID_WINDOW_MS 60000
#define RAPID_FIRST_MS 2000
#define RAPID_SECOND_MS 10000
#define COOLDOWN_MS 60000
#define COOLDOWN_STEP_MS 30000
#define COOLDOWN_MAX_MS 300000

void policy_init(policy *p, unsigned seed)
{
    *p = (policy){.seed = seed};
}

static double draw(policy *p)
{
    return (double)rand_r(&p->seed) / ((double)RAND_MAX + 1.0);
}

static int64_t doubled(unsigned attempt)
{
    int64_t d = BASE_MS;
    for (unsigned i = 0; i < attempt && d < CAP_MS; i++)
        d *= 2;
    return d < CAP_MS ? d : CAP_MS;
}

/* Forgets rapid disconnects older than the window; records one at now. */
static int count_rapid(policy *p, int64_t now, int rapid)
{
    int k = 0;
    for (int i = 0; i < p->nrapid; i++)
        if (now - p->rapid_at[i] < tscale_ms(RAPID_WINDOW_MS))
            p->rapid_at[k++] = p->rapid_at[i];
    p->nrapid = k;
    if (rapid) {
        if (p->nrapid == POLICY_RAPID_MAX) {
            for (int i = 1; i < p->nrapid; i++)
                p->rapid_at[i - 1] = p->rapid_at[i];
            p->nrapid--;
        }
        p->rapid_at[p->nrapid++] = now;
    }
    return p->nrapid;
}

static int64_t rapid_minimum(int n)
{
    if (n <= 0)
        return 0;
    if (n == 1)
        return RAPID_FIRST_MS;
    if (n == 2)
        return RAPID_SECOND_MS;
    int64_t cool = COOLDOWN_MS + (int64_t)COOLDOWN_STEP_MS * (n - 3);
    return cool < COOLDOWN_MAX_MS ? cool : COOLDOWN_MAX_MS;
}

static int64_t close_code_floor(policy *p, int code)
{
    if (code == 1012)
        return 1000 + (int64_t)(draw(p) * 4000);
    if (code == 1013)
        return 30000 + (int64_t)(draw(p) * 30000);
    return 0;
}

int64_t policy_delay(policy *p, int64_t now_ms, unsigned generation, int code, int64_t uptime_ms,
                     int64_t suggested_ms)
{
    (void)suggested_ms; /* phoenix's plain backoff knows no rapid minimums */
    if (generation == 0) { /* initial connect */
        int64_t d = doubled(p->initial_attempt++);
        return tscale_ms(d / 2 + (int64_t)(draw(p) * (double)(d / 2)));
    }
    if (uptime_ms >= tscale_ms(STABLE_MS)) {
        p->attempt = 0;
        p->nrapid = 0;
    } else {
        p->attempt++;
    }
    int n = count_rapid(p, now_ms, uptime_ms < tscale_ms(RAPID_UPTIME_MS));
    int64_t d = doubled(p->attempt);
    int64_t min = rapid_minimum(n);
    if (d < min)
        d = min;
    int64_t delay = n < 3 ? d / 2 + (int64_t)(draw(p) * (double)(d / 2))
                          : (int64_t)((double)d * (0.25 + 0.75 * draw(p)));
    int64_t floor = close_code_floor(p, code);
    return tscale_ms(delay > floor ? delay : floor);
}

int64_t policy_retry_delay(void *ud, unsigned generation, int code, int64_t uptime_ms,
                           int64_t suggested_ms)
{
    return policy_delay(ud, clock_mono_ms(), generation, code, uptime_ms, suggested_ms);
}
