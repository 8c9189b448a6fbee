#include "faults.h"

#include <stdio.h>
#include <string.h>

int faults_refusing(const faults *f, int64_t now_ms)
{
    return now_ms < f->refuse_until_ms;
}

static int aimed_at(const fail_plan *p, const char *method, const char *path)
{
    if (!p->match[0])
        return 1;
    size_t m = strlen(method);
    const char *prefix = p->match + m + 1;
    return strncmp(p->match, method, m) == 0 && p->match[m] == ' ' &&
           strncmp(path, prefix, strlen(prefix)) == 0;
}

int faults_take_failure(faults *f, const char *method, const char *path, int *status,
                        int *retry_after)
{
    for (int i = 0; i < FAULTS_MAX_PLANS; i++) {
        fail_plan *p = &f->plans[i];
        if (p->left <= 0 || !aimed_at(p, method, path))
            continue;
        p->left--;
        *status = p->status;
        *retry_after = p->retry_after;
        return 1;
    }
    return 0;
}

/* An integer field within [lo, hi]; `fallback` when absent (-1 = required). */
static int int_field(const cJSON *body, const char *name, int lo, int hi, int fallback, int *out,
                     char why[FAULTS_WHY_SZ])
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(body, name);
    if (!f && fallback >= 0) {
        *out = fallback;
        return 0;
    }
    if (!cJSON_IsNumber(f) || f->valuedouble < lo || f->valuedouble > hi ||
        f->valuedouble != (double)(int)f->valuedouble) {
        snprintf(why, FAULTS_WHY_SZ, "%s must be an integer from %d to %d", name, lo, hi);
        return -1;
    }
    *out = (int)f->valuedouble;
    return 0;
}

int faults_plan_refuse(faults *f, const cJSON *body, int64_t now_ms, char why[FAULTS_WHY_SZ])
{
    int seconds;
    if (int_field(body, "seconds", 0, 3600, -1, &seconds, why) != 0)
        return -1;
    f->refuse_until_ms = seconds ? now_ms + (int64_t)seconds * 1000 : 0;
    return 0;
}

int faults_plan_failures(faults *f, const cJSON *body, char why[FAULTS_WHY_SZ])
{
    int count, status, retry_after;
    if (int_field(body, "count", 0, 1000, -1, &count, why) != 0 ||
        int_field(body, "status", 400, 599, -1, &status, why) != 0 ||
        int_field(body, "retry_after", 0, 3600, status == 429 ? 1 : 0, &retry_after, why) != 0)
        return -1;
    const cJSON *match = cJSON_GetObjectItemCaseSensitive(body, "match");
    if (match && (!cJSON_IsString(match) || !strchr(match->valuestring, ' ') ||
                  strlen(match->valuestring) >= sizeof f->plans[0].match)) {
        snprintf(why, FAULTS_WHY_SZ, "match must be \"METHOD /path-prefix\"");
        return -1;
    }
    if (count == 0) {
        memset(f->plans, 0, sizeof f->plans);
        return 0;
    }
    /* Keep the live plans in planning order and add this one after them. */
    fail_plan live[FAULTS_MAX_PLANS];
    int n = 0;
    for (int i = 0; i < FAULTS_MAX_PLANS; i++)
        if (f->plans[i].left > 0)
            live[n++] = f->plans[i];
    if (n == FAULTS_MAX_PLANS) {
        snprintf(why, FAULTS_WHY_SZ, "already %d live fail_rest plans", FAULTS_MAX_PLANS);
        return -1;
    }
    live[n] = (fail_plan){count, status, retry_after, ""};
    snprintf(live[n].match, sizeof live[n].match, "%s", match ? match->valuestring : "");
    memset(f->plans, 0, sizeof f->plans);
    memcpy(f->plans, live, (size_t)(n + 1) * sizeof live[0]);
    return 0;
}

int faults_plan_delay(faults *f, const cJSON *body, char why[FAULTS_WHY_SZ])
{
    int ms;
    if (int_field(body, "ms", 0, FAULTS_DELAY_MAX_MS, -1, &ms, why) != 0)
        return -1;
    f->delay_ms = ms;
    return 0;
}
