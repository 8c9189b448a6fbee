#include "faults.h"

#include <stdio.h>
#include <string.h>

int faults_refusing(const faults *f, int64_t now_ms)
{
    return now_ms < f->refuse_until_ms;
}

static int aimed_at(const faults *f, const char *method, const char *path)
{
    if (!f->fail_match[0])
        return 1;
    size_t m = strlen(method);
    const char *prefix = f->fail_match + m + 1;
    return strncmp(f->fail_match, method, m) == 0 && f->fail_match[m] == ' ' &&
           strncmp(path, prefix, strlen(prefix)) == 0;
}

int faults_take_failure(faults *f, const char *method, const char *path, int *status,
                        int *retry_after)
{
    if (f->fail_left <= 0 || !aimed_at(f, method, path))
        return 0;
    f->fail_left--;
    *status = f->fail_status;
    *retry_after = f->fail_retry_after;
    return 1;
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
                  strlen(match->valuestring) >= sizeof f->fail_match)) {
        snprintf(why, FAULTS_WHY_SZ, "match must be \"METHOD /path-prefix\"");
        return -1;
    }
    f->fail_left = count;
    f->fail_status = status;
    f->fail_retry_after = retry_after;
    snprintf(f->fail_match, sizeof f->fail_match, "%s", match ? match->valuestring : "");
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
