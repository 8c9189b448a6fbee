/* state: the run state file, its lifecycle rules and its JSON shape.
 *
 * The JSON shape is written down once, as the field tables below, and both
 * state_to_json and state_parse walk the same tables: a field cannot be
 * written under one name and read back under another.
 */
#include "state.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "afile.h"
#include "redact.h"
#include "utf8.h"

/* A run state is a few tens of KiB; anything far larger is not ours. */
#define STATE_MAX_FILE (1024 * 1024)
/* The largest integer a JSON number (an IEEE double) carries exactly. */
#define JSON_MAX_INT 9007199254740992LL
#define LOCK_POLL_MS 20
#define STATE_FILE "state.json"
#define ARCHIVE_MAX_SUFFIX 100

const char *const state_mandatory_probes[STATE_MANDATORY_PROBES] = {
    "initial",
    "after-wifi-reconnect",
    "after-sleep-wake",
    "after-daemon-restart",
};

static const char *const run_phase_names[RUN__COUNT] = {
    [RUN_STARTED] = "started",
    [RUN_AWAITING_WIFI] = "awaiting-wifi-recovery",
    [RUN_AWAITING_SLEEP] = "awaiting-sleep-wake",
    [RUN_DAEMON_RESTART] = "daemon-restart",
    [RUN_COMPLETED] = "completed",
    [RUN_FAILED] = "failed",
};

static const char *const result_names[] = {
    [RESULT_NONE] = "",
    [RESULT_PASSED] = "passed",
    [RESULT_FAILED] = "failed",
    [RESULT_SKIPPED] = "skipped",
};
#define RESULT_COUNT ((int)(sizeof result_names / sizeof result_names[0]))

const char *state_run_phase_name(run_phase p)
{
    return (int)p >= 0 && p < RUN__COUNT ? run_phase_names[p] : "unknown";
}

err_code state_run_phase_parse(const char *name, run_phase *out)
{
    for (int p = 0; name && p < RUN__COUNT; p++) {
        if (strcmp(name, run_phase_names[p]) == 0) {
            *out = (run_phase)p;
            return ERR_OK;
        }
    }
    return ERR_USAGE;
}

const char *state_result_name(state_result r)
{
    return (int)r >= 0 && (int)r < RESULT_COUNT ? result_names[r] : "";
}

/* Only results that can be recorded have a name on disk; "" is not one. */
static int result_parse(const char *name, state_result *out)
{
    for (int r = RESULT_PASSED; r < RESULT_COUNT; r++) {
        if (strcmp(name, result_names[r]) == 0) {
            *out = (state_result)r;
            return 1;
        }
    }
    return 0;
}

const char *state_verdict_name(state_verdict v)
{
    switch (v) {
    case VERDICT_PASS:
        return "PASS";
    case VERDICT_FAIL:
        return "FAIL";
    case VERDICT_INCOMPLETE:
        break;
    }
    return "INCOMPLETE";
}

/* ---- small text helpers ------------------------------------------------ */

/* Cuts a string that was truncated to fit so that it does not end inside
 * a UTF-8 sequence (a half character would make the file invalid UTF-8). */
static void trim_partial_utf8(char *s)
{
    size_t len = strlen(s);
    size_t start = len;
    while (start > 0 && ((unsigned char)s[start - 1] & 0xC0) == 0x80)
        start--; /* back over continuation bytes */
    if (start == 0 || ((unsigned char)s[start - 1] & 0x80) == 0)
        return;
    unsigned char lead = (unsigned char)s[start - 1];
    size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (len - (start - 1) < want)
        s[start - 1] = '\0';
}

/* strlcpy that never leaves half a UTF-8 character behind, and the door
 * through which text enters the state: invalid UTF-8 (raw bytes of a Band
 * error body, an agent.log line) becomes U+FFFD, so state.json stays
 * readable by any strict JSON reader. */
static void copy_text(char *dst, size_t cap, const char *src)
{
    size_t len = src ? strlen(src) : 0;
    if (len >= cap)
        len = cap - 1;
    char *cut = malloc(len + 1);
    if (!cut) {
        dst[0] = '\0';
        return;
    }
    memcpy(cut, src ? src : "", len);
    cut[len] = '\0';
    trim_partial_utf8(cut);
    utf8_sanitize(cut, dst, cap);
    free(cut);
}

static int is_run_id(const char *s)
{
    for (int i = 0; i < 8; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return s[8] == '\0';
}

/* ---- the JSON shape ---------------------------------------------------- */

typedef enum field_kind {
    F_STR,    /* char[]; `required` means non-empty */
    F_RUN_ID, /* char[9]: 8 lowercase hex, or "" when optional */
    F_TIME,   /* int64_t ms <-> ISO-8601 UTC text, null when 0 */
    F_I64,    /* int64_t <-> whole number */
    F_INT,    /* int <-> whole number */
    F_TOKEN,  /* uint64_t <-> whole number up to 2^53 */
    F_BOOL,   /* int <-> true / false */
    F_PHASE,  /* run_phase <-> its name */
    F_RESULT, /* state_result <-> its name */
    F_OBJECT, /* nested struct, described by `sub` */
    F_PROBES, /* state_t.probes + nprobes <-> array */
    F_PHASES  /* state_t.phases + nphases <-> object keyed by name */
} field_kind;

typedef struct field {
    const char *key;
    field_kind kind;
    size_t off;  /* offset of the member in its struct */
    size_t size; /* size of the member (bytes of a char[]) */
    int required;
    const struct field *sub;
} field;

#define MEMBER(T, m) offsetof(T, m), sizeof(((T *)0)->m)
#define FIELD(T, key, kind, m) {key, kind, MEMBER(T, m), 0, NULL}
#define NEEDED(T, key, kind, m) {key, kind, MEMBER(T, m), 1, NULL}
#define OBJECT(T, key, m, sub) {key, F_OBJECT, MEMBER(T, m), 0, sub}
#define END {NULL, F_STR, 0, 0, 0, NULL}

static const field probe_fields[] = {
    NEEDED(state_probe, "label", F_STR, label),
    FIELD(state_probe, "marker", F_STR, marker),
    NEEDED(state_probe, "passed", F_BOOL, passed),
    FIELD(state_probe, "detail", F_STR, detail),
    FIELD(state_probe, "at", F_TIME, at_ms),
    FIELD(state_probe, "latency_ms", F_I64, latency_ms),
    FIELD(state_probe, "generation", F_INT, generation),
    END,
};

/* The name is the key of the entry in phases{}, not a field. */
static const field phase_fields[] = {
    NEEDED(state_phase_result, "status", F_RESULT, status),
    FIELD(state_phase_result, "at", F_TIME, at_ms),
    FIELD(state_phase_result, "detail", F_STR, detail),
    FIELD(state_phase_result, "duration_ms", F_I64, duration_ms),
    FIELD(state_phase_result, "output", F_STR, output), /* absent in older files */
    FIELD(state_phase_result, "diagnostics", F_STR, diagnostics), /* likewise */
    END,
};

/* residual_checks{} is a JSON object, but its members sit in state_t. */
static const field residual_fields[] = {
    FIELD(state_t, "sleep_wake", F_STR, residual_sleep_wake),
    FIELD(state_t, "daemon_restart", F_STR, residual_daemon_restart),
    END,
};

static const field wifi_fields[] = {
    FIELD(state_wifi_evidence, "disconnect_at", F_TIME, disconnect_at_ms),
    FIELD(state_wifi_evidence, "reconnect_at", F_TIME, reconnect_at_ms),
    FIELD(state_wifi_evidence, "generation", F_INT, generation),
    FIELD(state_wifi_evidence, "disconnect_line", F_STR, disconnect_line),
    FIELD(state_wifi_evidence, "reconnect_line", F_STR, reconnect_line),
    END,
};

static const field checkpoint_fields[] = {
    FIELD(clock_reading, "wall", F_TIME, wall_ms),
    FIELD(clock_reading, "awake_ms", F_I64, awake_ms),
    FIELD(clock_reading, "total_ms", F_I64, total_ms),
    END,
};

static const field sleep_fields[] = {
    OBJECT(state_sleep_evidence, "checkpoint", checkpoint, checkpoint_fields),
    FIELD(state_sleep_evidence, "slept_ms", F_I64, slept_ms),
    FIELD(state_sleep_evidence, "confirmed_at", F_TIME, confirmed_at_ms),
    FIELD(state_sleep_evidence, "method", F_STR, method),
    FIELD(state_sleep_evidence, "sandbox_status", F_STR, sandbox_status),
    END,
};

static const field daemon_fields[] = {
    FIELD(state_daemon_evidence, "stop_at", F_TIME, stop_at_ms),
    FIELD(state_daemon_evidence, "start_at", F_TIME, start_at_ms),
    FIELD(state_daemon_evidence, "sandbox_status", F_STR, sandbox_status),
    FIELD(state_daemon_evidence, "agent_exit", F_STR, agent_exit),
    FIELD(state_daemon_evidence, "ready_at", F_TIME, ready_at_ms),
    FIELD(state_daemon_evidence, "recovery_ms", F_I64, recovery_ms),
    END,
};

static const field evidence_fields[] = {
    OBJECT(state_evidence, "wifi", wifi, wifi_fields),
    OBJECT(state_evidence, "sleep", sleep, sleep_fields),
    OBJECT(state_evidence, "daemon_restart", daemon_restart, daemon_fields),
    END,
};

static const field agent_fields[] = {
    FIELD(state_agent_process, "generation", F_INT, generation),
    FIELD(state_agent_process, "pid", F_INT, pid),
    FIELD(state_agent_process, "start_token", F_TOKEN, start_token),
    FIELD(state_agent_process, "launched_at", F_TIME, launched_at_ms),
    FIELD(state_agent_process, "ready_at", F_TIME, ready_at_ms),
    FIELD(state_agent_process, "log_offset", F_I64, log_offset),
    FIELD(state_agent_process, "ended_at", F_TIME, ended_at_ms),
    FIELD(state_agent_process, "exit_detail", F_STR, exit_detail),
    END,
};

/* schema_version is not in the table: it is read first, alone, because it
 * decides whether the rest can be read at all. */
static const field state_fields[] = {
    NEEDED(state_t, "run_id", F_RUN_ID, run_id),
    NEEDED(state_t, "phase", F_PHASE, phase),
    FIELD(state_t, "sandbox_name", F_STR, sandbox_name),
    FIELD(state_t, "sandbox_created_by", F_RUN_ID, sandbox_created_by),
    FIELD(state_t, "workspace", F_STR, workspace),
    FIELD(state_t, "sbx_version", F_STR, sbx_version),
    FIELD(state_t, "sdk_version", F_STR, sdk_version),
    FIELD(state_t, "room_id", F_STR, room_id),
    FIELD(state_t, "agent_id", F_STR, agent_id),
    FIELD(state_t, "agent_name", F_STR, agent_name),
    FIELD(state_t, "room_title", F_STR, room_title),
    FIELD(state_t, "carried_from", F_RUN_ID, carried_from),
    FIELD(state_t, "probes", F_PROBES, probes),
    FIELD(state_t, "phases", F_PHASES, phases),
    {"residual_checks", F_OBJECT, 0, 0, 0, residual_fields}, /* members at offset 0 */
    OBJECT(state_t, "evidence", evidence, evidence_fields),
    OBJECT(state_t, "agent_process", agent_process, agent_fields),
    FIELD(state_t, "started_at", F_TIME, started_at_ms),
    FIELD(state_t, "updated_at", F_TIME, updated_at_ms),
    END,
};

/* Defaults for what a file may leave out: "unknown" is -1 for these. */
static void probe_defaults(state_probe *p)
{
    memset(p, 0, sizeof *p);
    p->latency_ms = -1;
}

static void state_defaults(state_t *st)
{
    memset(st, 0, sizeof *st);
    st->schema_version = STATE_SCHEMA_VERSION;
    st->phase = RUN_STARTED;
    st->evidence.sleep.slept_ms = -1;
}

/* ---- writing JSON ------------------------------------------------------ */

/* Every writer below takes `redact`: when set, each string is masked on
 * its own before it is quoted. Redacting the finished text instead would
 * let a line-based pattern ("X-API-Key:" to the end of the line) swallow
 * the closing quote and corrupt the file. */
static int put_fields(int redact, cJSON *obj, const void *base, const field *fields);

/* A char[] member as text, cut to its array even if the caller left it
 * unterminated, and (redacting) cut again so the masked text reads back. */
_Static_assert(STATE_OUTPUT_SZ >= STATE_PATH_SZ, "string_to_json's buffers fit every field");

static cJSON *string_to_json(int redact, const char *s, size_t cap)
{
    char text[STATE_OUTPUT_SZ];
    char clean[STATE_OUTPUT_SZ];
    if (cap > sizeof text)
        cap = sizeof text;
    const char *nul = memchr(s, '\0', cap);
    size_t len = nul ? (size_t)(nul - s) : cap - 1;
    memcpy(text, s, len);
    text[len] = '\0';
    if (redact) {
        /* masked first: a secret's bytes must match before any is replaced */
        redact_into(text, clean, cap);
        memcpy(text, clean, strlen(clean) + 1);
    }
    trim_partial_utf8(text);
    copy_text(clean, cap, text); /* a field filled directly, not through a setter */
    return cJSON_CreateString(clean);
}

static cJSON *time_to_json(int64_t ms)
{
    char buf[CLOCK_ISO_SZ];
    return ms ? cJSON_CreateString(clock_format_iso(ms, buf)) : cJSON_CreateNull();
}

/* Numbers past 2^53 would not read back exactly (nor at all, as the
 * reader refuses them); no duration or offset of a run gets near. */
static cJSON *whole_to_json(int64_t v)
{
    if (v > JSON_MAX_INT)
        v = JSON_MAX_INT;
    if (v < -JSON_MAX_INT)
        v = -JSON_MAX_INT;
    return cJSON_CreateNumber((double)v);
}

static cJSON *object_to_json(int redact, const void *base, const field *fields)
{
    cJSON *obj = cJSON_CreateObject();
    if (obj && !put_fields(redact, obj, base, fields)) {
        cJSON_Delete(obj);
        return NULL;
    }
    return obj;
}

static cJSON *probes_to_json(int redact, const state_t *st)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < st->nprobes; i++) {
        cJSON *item = object_to_json(redact, &st->probes[i], probe_fields);
        if (!item || !cJSON_AddItemToArray(arr, item)) {
            cJSON_Delete(item);
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

static cJSON *phases_to_json(int redact, const state_t *st)
{
    cJSON *obj = cJSON_CreateObject();
    for (int i = 0; obj && i < st->nphases; i++) {
        const state_phase_result *ph = &st->phases[i];
        cJSON *key = string_to_json(redact, ph->name, sizeof ph->name);
        cJSON *item = object_to_json(redact, ph, phase_fields);
        if (!key || !item || !cJSON_AddItemToObject(obj, key->valuestring, item)) {
            cJSON_Delete(item);
            cJSON_Delete(obj);
            obj = NULL;
        }
        cJSON_Delete(key);
    }
    return obj;
}

static cJSON *value_to_json(int redact, const void *base, const field *f)
{
    const char *at = (const char *)base + f->off;
    switch (f->kind) {
    case F_STR:
        return string_to_json(redact, at, f->size);
    case F_RUN_ID: /* generated hex: nothing to redact, and masking would break it */
        return string_to_json(0, at, f->size);
    case F_TIME:
        return time_to_json(*(const int64_t *)at);
    case F_I64:
        return whole_to_json(*(const int64_t *)at);
    case F_INT:
        return cJSON_CreateNumber(*(const int *)at);
    case F_TOKEN: {
        uint64_t token = *(const uint64_t *)at;
        return whole_to_json(token > (uint64_t)JSON_MAX_INT ? JSON_MAX_INT : (int64_t)token);
    }
    case F_BOOL:
        return cJSON_CreateBool(*(const int *)at);
    case F_PHASE:
        return cJSON_CreateString(state_run_phase_name(*(const run_phase *)at));
    case F_RESULT:
        return cJSON_CreateString(state_result_name(*(const state_result *)at));
    case F_OBJECT:
        return object_to_json(redact, at, f->sub);
    case F_PROBES:
        return probes_to_json(redact, base);
    case F_PHASES:
        return phases_to_json(redact, base);
    }
    return NULL;
}

/* Adds each field of `fields` to obj; 0 when out of memory. */
static int put_fields(int redact, cJSON *obj, const void *base, const field *fields)
{
    for (const field *f = fields; f->key; f++) {
        cJSON *item = value_to_json(redact, base, f);
        if (!item || !cJSON_AddItemToObject(obj, f->key, item)) {
            cJSON_Delete(item);
            return 0;
        }
    }
    return 1;
}

static char *render(const state_t *st, int redact)
{
    char *text = NULL;
    cJSON *root = cJSON_CreateObject();
    if (root && cJSON_AddNumberToObject(root, "schema_version", st->schema_version) &&
        put_fields(redact, root, st, state_fields))
        text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

char *state_to_json(const state_t *st)
{
    return st ? render(st, 0) : NULL;
}

/* ---- reading JSON ------------------------------------------------------ */

typedef struct reader {
    const char *what; /* the file, for messages */
    char *err;
} reader;

static err_code read_fields(const reader *r, const cJSON *obj, void *base,
                            const field *fields, const char *prefix);

static err_code bad_field(const reader *r, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static err_code bad_field(const reader *r, const char *name, const char *fmt, ...)
{
    char problem[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    return err_set(r->err, ERR_CORRUPT, "%s: field %s %s", r->what, name, problem);
}

/* A name is quoted in messages only when it is short, printable ASCII. */
static const char *quotable(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (n >= 40 || s[n] < 0x20 || s[n] > 0x7e || s[n] == '"')
            return "(not shown)";
    return s;
}

static err_code read_whole(const reader *r, const cJSON *item, const char *name,
                           int64_t min, int64_t max, int64_t *out)
{
    if (!cJSON_IsNumber(item))
        return bad_field(r, name, "is not a number");
    double d = item->valuedouble;
    /* The range test comes first: casting an out-of-range double is UB. */
    if (!(d >= (double)min && d <= (double)max))
        return bad_field(r, name, "is out of range");
    int64_t v = (int64_t)d;
    if ((double)v != d)
        return bad_field(r, name, "is not a whole number");
    *out = v;
    return ERR_OK;
}

static err_code read_string(const reader *r, const cJSON *item, const char *name,
                            const field *f, char *dst)
{
    if (!cJSON_IsString(item) || !item->valuestring)
        return bad_field(r, name, "is not a string");
    size_t len = strlen(item->valuestring);
    if (len >= f->size)
        return bad_field(r, name, "is too long (%zu bytes; at most %zu)", len, f->size - 1);
    if (f->required && len == 0)
        return bad_field(r, name, "is empty");
    if (f->kind == F_RUN_ID && len > 0 && !is_run_id(item->valuestring))
        return bad_field(r, name, "is not 8 lowercase hex digits");
    memcpy(dst, item->valuestring, len + 1);
    return ERR_OK;
}

static err_code read_time(const reader *r, const cJSON *item, const char *name, int64_t *out)
{
    if (!cJSON_IsString(item) || !item->valuestring)
        return bad_field(r, name, "is not a time (an ISO-8601 string or null)");
    if (clock_parse_iso(item->valuestring, out) != ERR_OK)
        return bad_field(r, name, "is not an ISO-8601 UTC time");
    return ERR_OK;
}

static err_code read_name(const reader *r, const cJSON *item, const char *name,
                          const field *f, void *dst)
{
    if (!cJSON_IsString(item) || !item->valuestring)
        return bad_field(r, name, "is not a string");
    const char *s = item->valuestring;
    if (f->kind == F_PHASE) {
        if (state_run_phase_parse(s, (run_phase *)dst) != ERR_OK)
            return bad_field(r, name, "has an unknown run phase \"%s\"", quotable(s));
    } else if (!result_parse(s, (state_result *)dst)) {
        return bad_field(r, name, "has an unknown status \"%s\"", quotable(s));
    }
    return ERR_OK;
}

static err_code read_probes(const reader *r, const cJSON *arr, state_t *st)
{
    if (!cJSON_IsArray(arr))
        return bad_field(r, "probes", "is not an array");
    int n = cJSON_GetArraySize(arr);
    if (n > STATE_MAX_PROBES)
        return bad_field(r, "probes", "has %d entries (at most %d)", n, STATE_MAX_PROBES);
    const cJSON *item;
    cJSON_ArrayForEach(item, arr) {
        char name[32];
        snprintf(name, sizeof name, "probes[%d]", st->nprobes);
        if (!cJSON_IsObject(item))
            return bad_field(r, name, "is not an object");
        state_probe *p = &st->probes[st->nprobes];
        probe_defaults(p);
        err_code rc = read_fields(r, item, p, probe_fields, name);
        if (rc != ERR_OK)
            return rc;
        st->nprobes++;
    }
    return ERR_OK;
}

static err_code read_phases(const reader *r, const cJSON *obj, state_t *st)
{
    if (!cJSON_IsObject(obj))
        return bad_field(r, "phases", "is not an object");
    const cJSON *item;
    cJSON_ArrayForEach(item, obj) {
        const char *key = item->string ? item->string : "";
        if (!key[0] || strlen(key) >= sizeof st->phases[0].name)
            return bad_field(r, "phases", "has a key that is empty or over %zu bytes",
                             sizeof st->phases[0].name - 1);
        char name[64];
        snprintf(name, sizeof name, "phases.%s", quotable(key));
        if (!cJSON_IsObject(item))
            return bad_field(r, name, "is not an object");
        state_phase_result ph;
        memset(&ph, 0, sizeof ph);
        err_code rc = read_fields(r, item, &ph, phase_fields, name);
        if (rc != ERR_OK)
            return rc;
        if (state_set_phase(st, key, ph.status, ph.at_ms, ph.duration_ms, ph.detail) != ERR_OK)
            return bad_field(r, "phases", "has more than %d entries", STATE_MAX_PHASES);
        state_set_phase_output(st, key, ph.output);
        state_set_phase_diagnostics(st, key, ph.diagnostics);
    }
    return ERR_OK;
}

/* The whole-number kinds differ only in range and in where v goes. */
static err_code read_integer(const reader *r, const cJSON *item, const char *name,
                             field_kind kind, void *at)
{
    int64_t min = kind == F_INT ? INT_MIN : kind == F_TOKEN ? 0 : -JSON_MAX_INT;
    int64_t max = kind == F_INT ? INT_MAX : JSON_MAX_INT;
    int64_t v = 0; /* read_whole sets it on ERR_OK; -O3 cannot see that */
    err_code rc = read_whole(r, item, name, min, max, &v);
    if (rc != ERR_OK)
        return rc;
    if (kind == F_INT)
        *(int *)at = (int)v;
    else if (kind == F_TOKEN)
        *(uint64_t *)at = (uint64_t)v;
    else
        *(int64_t *)at = v;
    return ERR_OK;
}

static err_code read_value(const reader *r, const cJSON *item, void *base,
                           const field *f, const char *name)
{
    void *at = (char *)base + f->off;
    switch (f->kind) {
    case F_STR:
    case F_RUN_ID:
        return read_string(r, item, name, f, at);
    case F_TIME:
        return read_time(r, item, name, at);
    case F_I64:
    case F_INT:
    case F_TOKEN:
        return read_integer(r, item, name, f->kind, at);
    case F_BOOL:
        if (!cJSON_IsBool(item))
            return bad_field(r, name, "is not a boolean");
        *(int *)at = cJSON_IsTrue(item);
        return ERR_OK;
    case F_PHASE:
    case F_RESULT:
        return read_name(r, item, name, f, at);
    case F_OBJECT:
        if (!cJSON_IsObject(item))
            return bad_field(r, name, "is not an object");
        return read_fields(r, item, at, f->sub, name);
    case F_PROBES:
        return read_probes(r, item, base);
    case F_PHASES:
        return read_phases(r, item, base);
    }
    return bad_field(r, name, "has no reader");
}

/* A missing or null field keeps the default already in *base. */
static err_code read_fields(const reader *r, const cJSON *obj, void *base,
                            const field *fields, const char *prefix)
{
    for (const field *f = fields; f->key; f++) {
        char name[96];
        snprintf(name, sizeof name, "%s%s%s", prefix, *prefix ? "." : "", f->key);
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, f->key);
        if (!item || cJSON_IsNull(item)) {
            if (f->required)
                return err_set(r->err, ERR_CORRUPT, "%s: field %s is missing", r->what, name);
            continue;
        }
        err_code rc = read_value(r, item, base, f, name);
        if (rc != ERR_OK)
            return rc;
    }
    return ERR_OK;
}

static err_code read_schema_version(const reader *r, const cJSON *root)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, "schema_version");
    if (!item || cJSON_IsNull(item))
        return err_set(r->err, ERR_CORRUPT,
                       "%s: missing schema_version (not a band-smoke run state?)", r->what);
    int64_t v = 0; /* read_whole sets it on ERR_OK; -O3 cannot see that */
    err_code rc = read_whole(r, item, "schema_version", INT_MIN, INT_MAX, &v);
    if (rc != ERR_OK)
        return rc;
    if (v != STATE_SCHEMA_VERSION)
        return err_set(r->err, ERR_CORRUPT,
                       "%s: unknown schema_version %lld (this band-smoke reads %d)", r->what,
                       (long long)v, STATE_SCHEMA_VERSION);
    return ERR_OK;
}

static int is_blank(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r')
            return 0;
    return 1;
}

/* True when the text stops inside a string or an open object or array:
 * what a crash mid-write leaves, worth telling apart from garbage. */
static int ends_early(const char *text, size_t len)
{
    long depth = 0;
    int in_string = 0, escaped = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            if (escaped)
                escaped = 0;
            else if (c == '\\')
                escaped = 1;
            else if (c == '"')
                in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return in_string || depth > 0;
}

/* Parses a private NUL-terminated copy: cJSON then cannot read past len
 * whatever its version, and a NUL inside the text is caught, not skipped. */
static err_code parse_json(const reader *r, const char *json, size_t len, cJSON **out)
{
    const char *nul = memchr(json, '\0', len);
    if (nul)
        return err_set(r->err, ERR_CORRUPT, "%s: not JSON (a NUL byte at byte %zu)", r->what,
                       (size_t)(nul - json));
    char *copy = malloc(len + 1);
    if (!copy)
        return err_set(r->err, ERR_NOMEM, "%s: out of memory reading it", r->what);
    memcpy(copy, json, len);
    copy[len] = '\0';
    const char *end = NULL;
    *out = cJSON_ParseWithOpts(copy, &end, 1);
    err_code rc = ERR_OK;
    size_t at = end ? (size_t)(end - copy) : 0;
    if (!*out && ends_early(copy, len))
        rc = err_set(r->err, ERR_CORRUPT, "%s: truncated (the JSON ends at byte %zu, unfinished)",
                     r->what, len);
    else if (!*out)
        rc = err_set(r->err, ERR_CORRUPT, "%s: not JSON (parse error near byte %zu)", r->what, at);
    free(copy);
    return rc;
}

static const char *json_type_name(const cJSON *item)
{
    if (cJSON_IsArray(item))
        return "an array";
    if (cJSON_IsString(item))
        return "a string";
    if (cJSON_IsNumber(item))
        return "a number";
    if (cJSON_IsBool(item))
        return "a boolean";
    return "null";
}

err_code state_parse(const char *json, size_t len, const char *what, state_t *out, char *err)
{
    reader r = {what ? what : "run state", err};
    if (!json || !out)
        return err_set(err, ERR_USAGE, "state_parse: no text or no state to fill");
    if (is_blank(json, len))
        return err_set(err, ERR_CORRUPT, "%s: file is empty", r.what);
    cJSON *root = NULL;
    err_code rc = parse_json(&r, json, len, &root);
    if (rc != ERR_OK)
        return rc;
    state_t *st = malloc(sizeof *st);
    if (!st) {
        rc = err_set(err, ERR_NOMEM, "%s: out of memory reading it", r.what);
    } else if (!cJSON_IsObject(root)) {
        rc = err_set(err, ERR_CORRUPT, "%s: the top level is %s, not an object", r.what,
                     json_type_name(root));
    } else if ((rc = read_schema_version(&r, root)) == ERR_OK) {
        state_defaults(st);
        rc = read_fields(&r, root, st, state_fields, "");
    }
    if (rc == ERR_OK)
        *out = *st; /* only a fully read state replaces *out */
    free(st);
    cJSON_Delete(root);
    return rc;
}

/* ---- files ------------------------------------------------------------- */

/* Reads exactly the file opened: saves rename a new file into place, so
 * the one behind fd never changes while it is read. */
static err_code read_fd(int fd, const char *path, size_t size, char **text, size_t *len, char *err)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return err_set(err, ERR_NOMEM, "out of memory reading %s", path);
    size_t used = 0;
    while (used < size) {
        ssize_t n = read(fd, buf + used, size - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(buf);
            return err_set(err, ERR_IO, "cannot read %s: %s", path, strerror(errno));
        }
        if (n == 0)
            break;
        used += (size_t)n;
    }
    buf[used] = '\0';
    *text = buf;
    *len = used;
    return ERR_OK;
}

/* Opens path without following a symlink and without blocking on a FIFO
 * or a device, then keeps it only when it is a regular file: a special
 * file planted in the state folder can neither hang a command (while it
 * holds the lock) nor send a write elsewhere. -1 with errno set when it
 * cannot be opened (ELOOP: a symlink), -2 when it is not a regular file. */
static int open_regular(const char *path, int flags, mode_t mode)
{
    int fd = open(path, flags | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0)
        return -1;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return -2;
    }
    return fd;
}

static err_code read_file(const char *path, char **text, size_t *len, char *err)
{
    int fd = open_regular(path, O_RDONLY, 0);
    if (fd == -1 && errno == ENOENT)
        return err_set(err, ERR_NOTFOUND, "no run state at %s", path);
    if (fd == -2 || (fd == -1 && errno == ELOOP))
        return err_set(err, ERR_CORRUPT, "%s: not a regular file (a symlink, FIFO or device "
                                         "is never read nor replaced; remove it)", path);
    if (fd < 0)
        return err_set(err, ERR_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat sb;
    err_code rc;
    if (fstat(fd, &sb) != 0)
        rc = err_set(err, ERR_IO, "cannot stat %s: %s", path, strerror(errno));
    else if (sb.st_size > STATE_MAX_FILE)
        rc = err_set(err, ERR_CORRUPT,
                     "%s: file is too large (%lld bytes; a run state is under %d)", path,
                     (long long)sb.st_size, STATE_MAX_FILE);
    else
        rc = read_fd(fd, path, (size_t)sb.st_size, text, len, err);
    close(fd);
    return rc;
}

/* Like afile_replace, but never over an existing file: link() fails when
 * the name is taken, which makes "first free name" race-free. */
static err_code create_file(const char *dir, const char *run_id, const char *text,
                            char *path, size_t cap, char *err)
{
    char tmp[STATE_PATH_SZ + 32];
    err_code rc = afile_write_temp(dir, "state", text, 0600, tmp, sizeof tmp, err);
    if (rc != ERR_OK)
        return rc;
    rc = err_set(err, ERR_IO, "no free archive name for run %s in %s", run_id, dir);
    for (int n = 1; n <= ARCHIVE_MAX_SUFFIX; n++) {
        if (n == 1)
            snprintf(path, cap, "%s/state.%s.json", dir, run_id);
        else
            snprintf(path, cap, "%s/state.%s-%d.json", dir, run_id, n);
        if (link(tmp, path) == 0) {
            rc = ERR_OK;
            break;
        }
        if (errno != EEXIST) {
            rc = err_set(err, ERR_IO, "cannot create %s: %s", path, strerror(errno));
            break;
        }
    }
    unlink(tmp);
    if (rc == ERR_OK)
        afile_sync_dir(dir);
    return rc;
}

/* ---- store ------------------------------------------------------------- */

static err_code make_dir(const char *path, char *err)
{
    if (mkdir(path, 0700) == 0 || errno == EEXIST)
        return ERR_OK;
    return err_set(err, ERR_IO, "cannot create folder %s: %s", path, strerror(errno));
}

/* mkdir -p, every folder it makes 0700; then the final one is made 0700
 * even if it already existed, since it holds the agent's key file. */
static err_code make_private_dir(const char *dir, char *err)
{
    char path[STATE_PATH_SZ];
    snprintf(path, sizeof path, "%s", dir); /* a path, not text: bytes kept as they are */
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        err_code rc = make_dir(path, err);
        *p = '/';
        if (rc != ERR_OK)
            return rc;
    }
    err_code rc = make_dir(path, err);
    if (rc != ERR_OK)
        return rc;
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return err_set(err, ERR_IO, "%s is not a folder", path);
    /* Another user's folder could be read or swapped under us, and it
     * would hold the agent's key file: refuse it before anything starts. */
    if (sb.st_uid != geteuid())
        return err_set(err, ERR_CONFIG,
                       "state folder %s is owned by uid %ld, not by you (uid %ld); set "
                       "SMOKE_STATE_DIR to a folder of your own",
                       path, (long)sb.st_uid, (long)geteuid());
    if ((sb.st_mode & 07777) != 0700 && chmod(path, 0700) != 0)
        return err_set(err, ERR_IO, "cannot make %s private (0700): %s", path, strerror(errno));
    return ERR_OK;
}

err_code state_store_init(state_store *store, const char *dir, const clock_src *clk, char *err)
{
    if (!store || !dir || !*dir)
        return err_set(err, ERR_USAGE, "no state folder given");
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--; /* "x/" + "/state.json" would still work, but reads badly */
    if (len >= sizeof store->dir)
        return err_set(err, ERR_USAGE, "state folder path is too long (%zu bytes)", len);
    memset(store, 0, sizeof *store);
    memcpy(store->dir, dir, len);
    snprintf(store->path, sizeof store->path, "%s/" STATE_FILE, store->dir);
    store->clock = clk ? *clk : clock_system();
    return make_private_dir(store->dir, err);
}

/* ---- runs -------------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL; /* splitmix64's finaliser */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* A run id must be unique among this folder's archives, not secret. Only
 * where /dev/urandom is missing (an odd chroot) does it fall back to time,
 * pid and a stack address. */
static void new_run_id(char id[9])
{
    uint32_t bits = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    int got = fd >= 0 && read(fd, &bits, sizeof bits) == (ssize_t)sizeof bits;
    if (fd >= 0)
        close(fd);
    if (!got) {
        struct timespec ts = {0, 0};
        clock_gettime(CLOCK_REALTIME, &ts);
        bits = (uint32_t)mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
                               ((uint64_t)getpid() << 40) ^ (uint64_t)(uintptr_t)&ts);
    }
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 8; i++)
        id[i] = hex[(bits >> (28 - 4 * i)) & 0xf];
    id[8] = '\0';
}

state_t *state_new(const state_store *store)
{
    state_t *st = malloc(sizeof *st);
    if (!st)
        return NULL;
    state_defaults(st);
    new_run_id(st->run_id);
    st->started_at_ms = clock_wall_ms(store ? &store->clock : NULL);
    st->updated_at_ms = st->started_at_ms;
    return st;
}

void state_free(state_t *st)
{
    free(st);
}

err_code state_load(const state_store *store, state_t **out, char *err)
{
    if (!store || !out)
        return err_set(err, ERR_USAGE, "state_load: no store or no result");
    char *text = NULL;
    size_t len = 0;
    err_code rc = read_file(store->path, &text, &len, err);
    if (rc != ERR_OK)
        return rc;
    state_t *st = malloc(sizeof *st);
    if (!st)
        rc = err_set(err, ERR_NOMEM, "out of memory loading %s", store->path);
    else
        rc = state_parse(text, len, store->path, st, err);
    free(text);
    if (rc != ERR_OK) {
        free(st);
        return rc;
    }
    *out = st;
    return ERR_OK;
}

/* The one guard against replacing a damaged file: whatever is on disk must
 * load (or be absent) before anything is written over it. */
static err_code check_replaceable(const state_store *store, char *err)
{
    state_t *disk = NULL;
    err_code rc = state_load(store, &disk, err);
    state_free(disk);
    if (rc == ERR_NOTFOUND || rc == ERR_OK)
        return ERR_OK;
    return err_wrap(err, rc, "refusing to replace a run state that cannot be read");
}

err_code state_save(const state_store *store, state_t *st, char *err)
{
    if (!store || !st)
        return err_set(err, ERR_USAGE, "state_save: no store or no state");
    err_code rc = check_replaceable(store, err);
    if (rc != ERR_OK)
        return rc;
    int64_t before = st->updated_at_ms;
    st->updated_at_ms = clock_wall_ms(&store->clock);
    char *text = render(st, 1);
    if (!text)
        rc = err_set(err, ERR_NOMEM, "out of memory saving %s", store->path);
    else
        rc = afile_replace(store->dir, STATE_FILE, text, 0600, err);
    free(text);
    if (rc != ERR_OK)
        st->updated_at_ms = before;
    return rc;
}

int state_is_terminal(const state_t *st)
{
    return st && (st->phase == RUN_COMPLETED || st->phase == RUN_FAILED);
}

int state_is_stale(const state_t *st, int64_t now_ms)
{
    if (!st)
        return 0;
    int64_t last = st->updated_at_ms ? st->updated_at_ms : st->started_at_ms;
    /* A run with no time at all cannot show it is recent: never continue it. */
    return last == 0 || now_ms - last > STATE_STALE_MS;
}

/* The run that follows `old`: the ids it never reaped, and with
 * keep_sandbox the sandbox facts, which outlive runs. */
static state_t *successor(const state_store *store, const state_t *old, int keep_sandbox)
{
    state_t *st = state_new(store);
    for (int i = 0; st && i < 4 && strcmp(st->run_id, old->run_id) == 0; i++)
        new_run_id(st->run_id); /* 1 in 2^32, but a self-reference would confuse */
    if (!st)
        return NULL;
    memcpy(st->room_id, old->room_id, sizeof st->room_id);
    memcpy(st->agent_id, old->agent_id, sizeof st->agent_id);
    memcpy(st->agent_name, old->agent_name, sizeof st->agent_name);
    memcpy(st->room_title, old->room_title, sizeof st->room_title);
    if (st->room_id[0] || st->agent_id[0] || st->agent_name[0] || st->room_title[0])
        memcpy(st->carried_from, old->run_id, sizeof st->carried_from);
    if (keep_sandbox) {
        memcpy(st->sandbox_name, old->sandbox_name, sizeof st->sandbox_name);
        memcpy(st->sandbox_created_by, old->sandbox_created_by, sizeof st->sandbox_created_by);
        memcpy(st->workspace, old->workspace, sizeof st->workspace);
        memcpy(st->sbx_version, old->sbx_version, sizeof st->sbx_version);
        memcpy(st->sdk_version, old->sdk_version, sizeof st->sdk_version);
    }
    return st;
}

static err_code rotate_run(const state_store *store, state_t **st, int keep_sandbox, char *err)
{
    state_t *old = *st;
    if (!is_run_id(old->run_id))
        return err_set(err, ERR_USAGE, "cannot archive a run without a valid run_id");
    state_t *fresh = successor(store, old, keep_sandbox);
    char *text = render(old, 1);
    char archive[STATE_PATH_SZ + 32];
    err_code rc = fresh && text ? ERR_OK : err_set(err, ERR_NOMEM, "out of memory archiving");
    if (rc == ERR_OK)
        rc = create_file(store->dir, old->run_id, text, archive, sizeof archive, err);
    if (rc == ERR_OK) {
        rc = state_save(store, fresh, err);
        if (rc != ERR_OK)
            unlink(archive); /* state.json still holds the old run */
    }
    free(text);
    if (rc != ERR_OK) {
        state_free(fresh);
        return rc;
    }
    state_free(old);
    *st = fresh;
    return ERR_OK;
}

err_code state_rotate(const state_store *store, state_t **st, char *err)
{
    if (!store || !st || !*st)
        return err_set(err, ERR_USAGE, "state_rotate: no store or no run");
    return rotate_run(store, st, 0, err);
}

err_code state_open_run(const state_store *store, state_t **out, int *rotated, char *err)
{
    if (!store || !out)
        return err_set(err, ERR_USAGE, "state_open_run: no store or no result");
    if (rotated)
        *rotated = 0;
    state_t *st = NULL;
    err_code rc = state_load(store, &st, err);
    if (rc == ERR_NOTFOUND) {
        st = state_new(store);
        rc = st ? state_save(store, st, err) : err_set(err, ERR_NOMEM, "out of memory");
    } else if (rc == ERR_OK && (state_is_terminal(st) ||
                                state_is_stale(st, clock_wall_ms(&store->clock)))) {
        rc = state_rotate(store, &st, err);
        if (rc == ERR_OK && rotated)
            *rotated = 1;
    }
    if (rc != ERR_OK) {
        state_free(st);
        return rc;
    }
    *out = st;
    return ERR_OK;
}

err_code state_begin_provision(const state_store *store, state_t **st, int *rotated, char *err)
{
    if (rotated)
        *rotated = 0;
    if (!store || !st || !*st)
        return err_set(err, ERR_USAGE, "state_begin_provision: no store or no run");
    if ((*st)->nprobes == 0 || (*st)->phase == RUN_DAEMON_RESTART)
        return ERR_OK;
    err_code rc = rotate_run(store, st, 1, err);
    if (rc == ERR_OK && rotated)
        *rotated = 1;
    return rc;
}

/* ---- probes, phases, residual checks, verdict ---------------------------- */

err_code state_add_probe(state_t *st, const state_probe *probe)
{
    if (!st || !probe || !probe->label[0])
        return ERR_USAGE;
    if (st->nprobes >= STATE_MAX_PROBES)
        return ERR_FULL;
    state_probe *p = &st->probes[st->nprobes++];
    *p = *probe;
    p->label[sizeof p->label - 1] = '\0'; /* the caller's arrays may be unterminated */
    p->marker[sizeof p->marker - 1] = '\0';
    p->detail[sizeof p->detail - 1] = '\0';
    return ERR_OK;
}

const state_probe *state_latest_probe(const state_t *st, const char *label)
{
    for (int i = st && label ? st->nprobes - 1 : -1; i >= 0; i--)
        if (strcmp(st->probes[i].label, label) == 0)
            return &st->probes[i];
    return NULL;
}

int state_probe_attempts(const state_t *st, const char *label)
{
    int n = 0;
    for (int i = 0; st && label && i < st->nprobes; i++)
        n += strcmp(st->probes[i].label, label) == 0;
    return n;
}

static int phase_index(const state_t *st, const char *name)
{
    for (int i = 0; i < st->nphases; i++)
        if (strcmp(st->phases[i].name, name) == 0)
            return i;
    return -1;
}

err_code state_set_phase(state_t *st, const char *name, state_result status, int64_t at_ms,
                         int64_t duration_ms, const char *detail)
{
    if (!st || !name || !*name || strlen(name) >= sizeof st->phases[0].name ||
        (int)status < RESULT_NONE || (int)status >= RESULT_COUNT)
        return ERR_USAGE;
    int i = phase_index(st, name);
    if (status == RESULT_NONE) { /* "never run": no entry at all */
        if (i >= 0) {
            memmove(&st->phases[i], &st->phases[i + 1],
                    (size_t)(st->nphases - i - 1) * sizeof st->phases[0]);
            st->nphases--;
        }
        return ERR_OK;
    }
    if (i < 0) {
        if (st->nphases >= STATE_MAX_PHASES)
            return ERR_FULL;
        i = st->nphases++;
    }
    state_phase_result *ph = &st->phases[i];
    copy_text(ph->name, sizeof ph->name, name);
    ph->status = status;
    ph->at_ms = at_ms;
    ph->duration_ms = duration_ms;
    copy_text(ph->detail, sizeof ph->detail, detail);
    ph->output[0] = '\0';
    ph->diagnostics[0] = '\0';
    return ERR_OK;
}

err_code state_set_phase_diagnostics(state_t *st, const char *name, const char *file)
{
    if (!st || !name || !file || strlen(file) >= sizeof st->phases[0].diagnostics)
        return ERR_USAGE;
    int i = phase_index(st, name);
    if (i < 0)
        return ERR_NOTFOUND;
    memcpy(st->phases[i].diagnostics, file, strlen(file) + 1);
    return ERR_OK;
}

err_code state_set_phase_output(state_t *st, const char *name, const char *text)
{
    if (!st || !name || !text)
        return ERR_USAGE;
    int i = phase_index(st, name);
    if (i < 0)
        return ERR_NOTFOUND;
    /* Redact the whole text before cutting it: a cut could split a secret
     * and leave a piece of it that no longer matches. */
    char *clean = redact_str(text);
    if (!clean)
        return ERR_NOMEM;
    const char *keep = clean;
    size_t full = strlen(clean);
    if (full >= STATE_OUTPUT_SZ) {
        /* Keep the last lines whole, so the newest (the failure) stays. */
        keep = clean + full - (STATE_OUTPUT_SZ - 1);
        const char *nl = strchr(keep, '\n');
        if (nl && nl[1])
            keep = nl + 1;
    }
    copy_text(st->phases[i].output, STATE_OUTPUT_SZ, keep);
    free(clean);
    return ERR_OK;
}

const state_phase_result *state_phase(const state_t *st, const char *name)
{
    int i = st && name ? phase_index(st, name) : -1;
    return i >= 0 ? &st->phases[i] : NULL;
}

static char *residual_slot(const state_t *st, const char *check)
{
    if (!st || !check)
        return NULL;
    if (strcmp(check, "sleep_wake") == 0)
        return (char *)st->residual_sleep_wake;
    if (strcmp(check, "daemon_restart") == 0)
        return (char *)st->residual_daemon_restart;
    return NULL;
}

err_code state_set_residual(state_t *st, const char *check, const char *text)
{
    char *slot = residual_slot(st, check);
    if (!slot)
        return ERR_USAGE;
    copy_text(slot, STATE_TEXT_SZ, text);
    return ERR_OK;
}

const char *state_residual(const state_t *st, const char *check)
{
    return residual_slot(st, check);
}

state_verdict state_verdict_of(const state_t *st)
{
    if (!st)
        return VERDICT_INCOMPLETE;
    if (st->phase == RUN_FAILED)
        return VERDICT_FAIL;
    /* Any label's latest attempt failing fails the run, mandatory or not. */
    for (int i = 0; i < st->nprobes; i++)
        if (!state_latest_probe(st, st->probes[i].label)->passed)
            return VERDICT_FAIL;
    for (int i = 0; i < STATE_MANDATORY_PROBES; i++)
        if (!state_latest_probe(st, state_mandatory_probes[i]))
            return VERDICT_INCOMPLETE;
    return VERDICT_PASS;
}

/* ---- lock -------------------------------------------------------------- */

/* A writer killed between mkstemp and rename leaves its temp file behind.
 * Every writer saves under the lock, so whoever holds it may sweep them. */
static void remove_dead_temps(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        /* afile's temp names: .state.json.tmp.* (saves), .state.tmp.* (archives) */
        if (strncmp(e->d_name, ".state.", 7) != 0 || !strstr(e->d_name, ".tmp."))
            continue;
        char path[STATE_PATH_SZ + 300];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

/* fcntl locks belong to the process: a second state_lock in the same
 * process succeeds, and closing any descriptor of the lock file drops it.
 * One lock per process, held from load to save, is the intended use. */
err_code state_lock(const state_store *store, int timeout_ms, int *fd, char *err)
{
    if (!store || !fd)
        return err_set(err, ERR_USAGE, "state_lock: no store or no fd");
    char path[STATE_PATH_SZ + 16];
    snprintf(path, sizeof path, "%s/.lock", store->dir);
    int lfd = open_regular(path, O_RDWR | O_CREAT, 0600);
    if (lfd == -2 || (lfd == -1 && errno == ELOOP))
        return err_set(err, ERR_IO, "%s is not a regular file (a symlink there is never "
                                    "followed); remove it", path);
    if (lfd < 0)
        return err_set(err, ERR_IO, "cannot open %s: %s", path, strerror(errno));
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET; /* start 0, length 0: the whole file */
    int64_t deadline = clock_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    int tries = (timeout_ms > 0 ? timeout_ms / LOCK_POLL_MS : 0) + 2;
    for (int i = 0; i < tries; i++) {
        if (fcntl(lfd, F_SETLK, &fl) == 0) {
            *fd = lfd;
            remove_dead_temps(store->dir);
            return ERR_OK;
        }
        if (errno != EACCES && errno != EAGAIN && errno != EINTR) {
            err_set(err, ERR_IO, "cannot lock %s: %s", path, strerror(errno));
            close(lfd);
            return ERR_IO;
        }
        if (clock_mono_ms() >= deadline)
            break;
        clock_sleep_ms(LOCK_POLL_MS);
    }
    close(lfd);
    return err_set(err, ERR_TIMEOUT, "another band-smoke holds %s (waited %d ms)", path,
                   timeout_ms > 0 ? timeout_ms : 0);
}

void state_unlock(int fd)
{
    if (fd >= 0)
        close(fd);
}
