/* faults: the planned misbehaviour of the REST and accept paths.
 *
 * Tests plan faults through POST /_fake/control (control.h); this module
 * keeps the plans and answers the questions the request path asks:
 * should this new connection be refused, should this REST call fail, how
 * long should its answer wait. Socket faults (drop, close, garbage) act at
 * once and live in ws.h. Times are monotonic milliseconds (clock_mono_ms).
 */
#ifndef FAKE_BAND_FAULTS_H
#define FAKE_BAND_FAULTS_H

#include <cjson/cJSON.h>
#include <stdint.h>

#define FAULTS_WHY_SZ 128
#define FAULTS_DELAY_MAX_MS 60000

#define FAULTS_MAX_PLANS 8

/* One fail_rest plan: the next `left` matching REST calls fail. */
typedef struct fail_plan {
    int left;
    int status;
    int retry_after; /* seconds for Retry-After; 0 = no header */
    char match[128]; /* "METHOD /path-prefix" the failures aim at; "" = any */
} fail_plan;

typedef struct faults {
    int64_t refuse_until_ms; /* new connections are closed until then */
    fail_plan plans[FAULTS_MAX_PLANS]; /* in the order they were planned */
    int delay_ms;            /* added before every REST answer */
    int reject_agent_ws;     /* agent upgrades get 403 (control reject_agent_ws) */
} faults;

/* True while connections are being refused. */
int faults_refusing(const faults *f, int64_t now_ms);

/* Takes one planned REST failure for this request: 1 with *status and
 * *retry_after set, or 0 when none is left or the plan aims elsewhere. */
int faults_take_failure(faults *f, const char *method, const char *path, int *status,
                        int *retry_after);

/* Plans from a control body. Each returns 0, or -1 with `why` saying which
 * field is wrong (nothing is changed then).
 *   refuse    {"seconds": N}                   0 <= N <= 3600 (0 stops refusing)
 *   fail_rest {"count": N, "status": S, "retry_after": R?, "match": M?}
 *             0 <= N <= 1000, 400 <= S <= 599, 0 <= R <= 3600; a 429
 *             without retry_after gets 1 s; M ("POST /api/v1/me/chats")
 *             aims the failures at requests of that method whose path
 *             starts with that prefix, so a test can fail one step of a
 *             sequence. Plans add up (at most FAULTS_MAX_PLANS live ones):
 *             a call takes a failure from the first live plan aimed at
 *             it. count 0 cancels every plan.
 *   delay     {"ms": N}                        0 <= N <= FAULTS_DELAY_MAX_MS */
int faults_plan_refuse(faults *f, const cJSON *body, int64_t now_ms, char why[FAULTS_WHY_SZ]);
int faults_plan_failures(faults *f, const cJSON *body, char why[FAULTS_WHY_SZ]);
int faults_plan_delay(faults *f, const cJSON *body, char why[FAULTS_WHY_SZ]);

#endif
