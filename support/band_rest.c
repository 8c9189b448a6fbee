#include "band_rest.h"

#include <limits.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "band_http.h"
#include "clock.h"
#include "config.h"
#include "redact.h"

#define DEFAULT_TIMEOUT_MS 30000L
#define DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define DELETE_CHAT_TIMEOUT_MS 30000L /* the toolkit's own, whatever the client's */
#define ACTIVITY_TIMEOUT_MS 2000L     /* the SDK's */
#define PATH_SZ 1024
#define ID_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"

struct band_client {
    band_http *http;
    band_options opts; /* ca_file cleared: curl keeps its own copy */
    band_result last;
};

/* One call: what band_http sends, and how to judge the answer. */
typedef struct request {
    band_http_request http;
    int any_2xx; /* success needs no envelope (the room delete) */
} request;

/* Turns the data of a 2xx into the caller's record. */
typedef err_code (*reader)(const band_envelope *env, void *out, char *err);

/* ---- the client ----------------------------------------------------------- */

band_options band_options_default(void)
{
    band_options o;
    memset(&o, 0, sizeof o);
    o.timeout_ms = DEFAULT_TIMEOUT_MS;
    o.connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
    o.retry_base_ms = BAND_HTTP_RETRY_BASE_MS;
    o.retry_cap_ms = BAND_HTTP_RETRY_CAP_MS;
    return o;
}

static err_code check_options(const band_options *o, char *err)
{
    if (o->timeout_ms <= 0 || o->connect_timeout_ms <= 0)
        return err_set(err, ERR_USAGE, "Band timeouts must be positive");
    if (o->max_retries < 0 || o->max_retries > BAND_MAX_RETRIES)
        return err_set(err, ERR_USAGE, "Band max_retries must be 0..%d", BAND_MAX_RETRIES);
    if (o->retry_base_ms <= 0 || o->retry_cap_ms < o->retry_base_ms)
        return err_set(err, ERR_USAGE, "Band retry backoff needs 0 < retry_base_ms <= retry_cap_ms");
    return ERR_OK;
}

static err_code protect_key(const char *key, char *err)
{
    switch (redact_add_secret(key)) {
    case ERR_OK:
        return ERR_OK;
    case ERR_FULL:
        return err_set(err, ERR_FULL, "too many secrets to mask; refusing another key");
    case ERR_NOMEM:
        return err_set(err, ERR_NOMEM, "out of memory registering a key with redact");
    default:
        return err_set(err, ERR_USAGE, "the API key is too short to be a Band key");
    }
}

err_code band_client_new(const char *base_url, const char *api_key,
                         const band_options *opts, band_client **out, char *err)
{
    if (!out)
        return err_set(err, ERR_USAGE, "band_client_new: missing output");
    *out = NULL;
    if (!base_url || !api_key || !api_key[0])
        return err_set(err, ERR_USAGE, "band_client_new: base URL and API key are required");
    band_options o = opts ? *opts : band_options_default();
    err_code rc = check_options(&o, err);
    if (rc == ERR_OK && config_url_is_production(base_url))
        rc = err_set(err, ERR_PRODUCTION,
                     "the Band REST URL points at production (app.band.ai); "
                     "this suite runs against staging only");
    if (rc == ERR_OK)
        rc = protect_key(api_key, err);
    if (rc != ERR_OK)
        return rc;
    band_client *c = calloc(1, sizeof *c);
    if (!c)
        return err_set(err, ERR_NOMEM, "out of memory creating the Band client");
    band_http_setup setup = {api_key, o.ca_file, o.debug, o.connect_timeout_ms};
    rc = band_http_new(base_url, &setup, &c->http, err);
    if (rc != ERR_OK) {
        free(c);
        return rc;
    }
    o.ca_file = NULL;
    c->opts = o;
    *out = c;
    return ERR_OK;
}

void band_client_free(band_client *c)
{
    if (!c)
        return;
    band_http_free(c->http);
    free(c);
}

const band_result *band_last_result(const band_client *c)
{
    return c ? &c->last : NULL;
}

long band_last_status(const band_client *c)
{
    return c ? c->last.status : 0;
}

/* ---- one call, with its retries ------------------------------------------- */

static void append(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void append(char *err, const char *fmt, ...)
{
    if (!err)
        return;
    size_t used = strnlen(err, ERR_BUFSZ - 1);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + used, ERR_BUFSZ - used, fmt, ap);
    va_end(ap);
}

/* Sends rq (with the retries band_http allows) and reads the envelope of
 * the last answer into env (zeroed by the caller; free it whatever
 * happens). */
static err_code perform(band_client *c, const request *rq, band_envelope *env, char *err)
{
    const band_http_request *hr = &rq->http;
    band_http_response resp;
    err_code rc = band_http_send(c->http, hr, &resp, err);
    memset(&c->last, 0, sizeof c->last);
    c->last.status = resp.status;
    c->last.attempts = resp.attempts;
    c->last.waited_ms = resp.waited_ms;
    c->last.elapsed_ms = resp.elapsed_ms;
    if (rc == ERR_OK && !(rq->any_2xx && resp.status >= 200 && resp.status <= 299)) {
        rc = band_envelope_parse(resp.status, resp.body, resp.len, env, err);
        memcpy(c->last.code, env->code, sizeof c->last.code);
        memcpy(c->last.request_id, env->request_id, sizeof c->last.request_id);
        if (rc != ERR_OK)
            err_wrap(err, rc, "%s %s", hr->method, hr->path);
    }
    if (rc != ERR_OK && resp.skipped_wait_ms > 0)
        append(err, "; no retry: waiting %ld ms would pass the %ld ms deadline",
               resp.skipped_wait_ms, hr->timeout_ms);
    if (rc != ERR_OK && resp.attempts > 1)
        append(err, " (%d attempts)", resp.attempts);
    return rc;
}

/* perform, then hand the data to `read`. */
static err_code run(band_client *c, const request *rq, reader read, void *out, char *err)
{
    band_envelope env;
    memset(&env, 0, sizeof env);
    err_code rc = perform(c, rq, &env, err);
    if (rc == ERR_OK && read) {
        rc = read(&env, out, err);
        if (rc != ERR_OK)
            err_wrap(err, rc, "%s %s: HTTP %ld", rq->http.method, rq->http.path, env.status);
    }
    band_envelope_free(&env);
    return rc;
}

/* A call with the client's deadline and retries. One that creates
 * something is repeatable only when the options accept duplicates. */
static request make_request(const band_client *c, const char *method, const char *path,
                            const char *json, int creates)
{
    request rq = {{method, path, json, c->opts.timeout_ms, c->opts.max_retries,
                   !creates || c->opts.retry_creates, c->opts.retry_base_ms,
                   c->opts.retry_cap_ms},
                  0};
    return rq;
}

err_code band_call(band_client *c, const char *method, const char *path,
                   const char *json, band_envelope *out, char *err)
{
    if (!c || !method || !path || !out)
        return err_set(err, ERR_USAGE, "band_call: missing argument");
    memset(out, 0, sizeof *out);
    int reads = strcmp(method, "GET") == 0 || strcmp(method, "DELETE") == 0;
    request rq = make_request(c, method, path, json, !reads);
    return perform(c, &rq, out, err);
}

/* ---- reading records ---------------------------------------------------------- */

typedef enum field_kind { TEXT, TIME, FLAG } field_kind;

typedef struct field {
    const char *name;
    field_kind kind;
    int required;
    size_t offset, size;
} field;

#define TEXT_FIELD(type, member, name, req) \
    {name, TEXT, req, offsetof(type, member), sizeof(((type *)0)->member)}
#define TIME_FIELD(type, member, name, req) {name, TIME, req, offsetof(type, member), 0}
#define FLAG_FIELD(type, member, name) {name, FLAG, 0, offsetof(type, member), 0}

/* Required means present, not null and, for text, not empty. */
static err_code take_text(const cJSON *obj, const char *name, int required, char *dst,
                          size_t cap, char *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    dst[0] = '\0';
    if (!v || cJSON_IsNull(v) || (cJSON_IsString(v) && !v->valuestring[0]))
        return required ? err_set(err, ERR_PROTOCOL, "\"%s\" is missing", name) : ERR_OK;
    if (!cJSON_IsString(v))
        return err_set(err, ERR_PROTOCOL, "\"%s\" is not a string", name);
    size_t n = strlen(v->valuestring);
    if (n >= cap)
        return err_set(err, ERR_PROTOCOL, "\"%s\" is longer than %zu bytes", name, cap - 1);
    memcpy(dst, v->valuestring, n + 1);
    return ERR_OK;
}

static err_code take_time(const cJSON *obj, const char *name, int required, int64_t *ms,
                          char *err)
{
    char text[64];
    *ms = 0;
    err_code rc = take_text(obj, name, required, text, sizeof text, err);
    if (rc != ERR_OK || !text[0])
        return rc;
    if (clock_parse_iso(text, ms) != ERR_OK)
        return err_set(err, ERR_PROTOCOL, "\"%s\" is not an ISO-8601 time", name);
    return ERR_OK;
}

static err_code take_fields(const cJSON *obj, void *rec, const field *fields, size_t n,
                            char *err)
{
    if (!cJSON_IsObject(obj))
        return err_set(err, ERR_PROTOCOL, "expected an object");
    for (size_t i = 0; i < n; i++) {
        const field *f = &fields[i];
        char *at = (char *)rec + f->offset;
        err_code rc = ERR_OK;
        if (f->kind == TEXT)
            rc = take_text(obj, f->name, f->required, at, f->size, err);
        else if (f->kind == TIME)
            rc = take_time(obj, f->name, f->required, (int64_t *)(void *)at, err);
        else
            *(int *)(void *)at = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, f->name));
        if (rc != ERR_OK)
            return rc;
    }
    return ERR_OK;
}

static int take_int(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsNumber(v))
        return 0;
    if (v->valuedouble >= INT_MAX)
        return INT_MAX;
    return v->valuedouble <= 0 ? 0 : (int)v->valuedouble;
}

static err_code take_page_info(const cJSON *meta, band_page_info *info, char *err)
{
    memset(info, 0, sizeof *info);
    if (!meta)
        return ERR_OK;
    info->has_more = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(meta, "has_more"));
    info->page = take_int(meta, "page");
    info->page_size = take_int(meta, "page_size");
    info->total_pages = take_int(meta, "total_pages");
    info->total_count = take_int(meta, "total_count");
    err_code rc = take_text(meta, "next_cursor", 0, info->next_cursor,
                            sizeof info->next_cursor, err);
    return rc != ERR_OK ? err_wrap(err, rc, "metadata") : ERR_OK;
}

/* A record type: its fields, plus what the table cannot say (the
 * message's malloc'd content) and how to release that. */
typedef struct record_kind {
    size_t size;
    const field *fields;
    size_t n_fields;
    err_code (*extra)(const cJSON *obj, void *rec, char *err);
    void (*clear)(void *rec);
} record_kind;

#define RECORD_KIND(type, fields, extra, clear) \
    {sizeof(type), fields, sizeof fields / sizeof fields[0], extra, clear}

static err_code read_record(const cJSON *obj, void *rec, const record_kind *kind, char *err)
{
    err_code rc = take_fields(obj, rec, kind->fields, kind->n_fields, err);
    return rc == ERR_OK && kind->extra ? kind->extra(obj, rec, err) : rc;
}

/* A JSON list into a calloc'd array of records (*items, the caller's). */
static err_code read_items(const cJSON *data, const record_kind *kind, void **items,
                           size_t *count, char *err)
{
    *items = NULL;
    *count = 0;
    if (!cJSON_IsArray(data))
        return err_set(err, ERR_PROTOCOL, "\"data\" is not a list");
    size_t n = (size_t)cJSON_GetArraySize(data), i = 0;
    char *arr = calloc(n ? n : 1, kind->size);
    if (!arr)
        return err_set(err, ERR_NOMEM, "out of memory for %zu records", n);
    const cJSON *item;
    cJSON_ArrayForEach(item, data) {
        err_code rc = read_record(item, arr + i * kind->size, kind, err);
        if (rc != ERR_OK) {
            for (size_t j = 0; kind->clear && j <= i; j++)
                kind->clear(arr + j * kind->size);
            free(arr);
            return err_wrap(err, rc, "item %zu", i);
        }
        i++;
    }
    *items = arr;
    *count = n;
    return ERR_OK;
}

static const field message_fields[] = {
    TEXT_FIELD(band_message, id, "id", 1),
    TEXT_FIELD(band_message, message_type, "message_type", 1),
    TEXT_FIELD(band_message, sender_id, "sender_id", 1),
    TEXT_FIELD(band_message, sender_type, "sender_type", 1),
    TEXT_FIELD(band_message, sender_name, "sender_name", 0),
    TEXT_FIELD(band_message, chat_room_id, "chat_room_id", 0),
    TIME_FIELD(band_message, inserted_at_ms, "inserted_at", 0),
};

/* Content has no size limit, so it is copied rather than kept in the table. */
static err_code take_content(const cJSON *obj, void *rec, char *err)
{
    band_message *m = rec;
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(obj, "content");
    if (!cJSON_IsString(content))
        return err_set(err, ERR_PROTOCOL, "\"content\" is missing or not a string");
    m->content = strdup(content->valuestring);
    return m->content ? ERR_OK : err_set(err, ERR_NOMEM, "out of memory copying a message");
}

static void clear_message(void *rec)
{
    band_message_clear(rec);
}

static const field participant_fields[] = {
    TEXT_FIELD(band_participant, id, "id", 1),
    TEXT_FIELD(band_participant, type, "type", 1),
    TEXT_FIELD(band_participant, name, "name", 0),
    TEXT_FIELD(band_participant, handle, "handle", 0),
    TEXT_FIELD(band_participant, role, "role", 0),
};

static const field agent_summary_fields[] = {
    TEXT_FIELD(band_agent_summary, id, "id", 1),
    TEXT_FIELD(band_agent_summary, name, "name", 1),
    TIME_FIELD(band_agent_summary, inserted_at_ms, "inserted_at", 1),
    TIME_FIELD(band_agent_summary, updated_at_ms, "updated_at", 0),
    FLAG_FIELD(band_agent_summary, is_external, "is_external"),
};

static const field chat_fields[] = {
    TEXT_FIELD(band_chat, id, "id", 1),
    TEXT_FIELD(band_chat, title, "title", 0),
};

static const field profile_fields[] = {
    TEXT_FIELD(band_profile, id, "id", 1),
    TEXT_FIELD(band_profile, handle, "handle", 0),
};

static const field agent_info_fields[] = {
    TEXT_FIELD(band_agent_info, id, "id", 1),
    TEXT_FIELD(band_agent_info, name, "name", 1),
    TEXT_FIELD(band_agent_info, handle, "handle", 1),
    TEXT_FIELD(band_agent_info, description, "description", 0),
    TEXT_FIELD(band_agent_info, owner_uuid, "owner_uuid", 0),
};

static const field new_agent_fields[] = {
    TEXT_FIELD(band_new_agent, id, "id", 1),
    TEXT_FIELD(band_new_agent, name, "name", 1),
};

static const record_kind message_kind =
    RECORD_KIND(band_message, message_fields, take_content, clear_message);
static const record_kind participant_kind =
    RECORD_KIND(band_participant, participant_fields, NULL, NULL);
static const record_kind agent_summary_kind =
    RECORD_KIND(band_agent_summary, agent_summary_fields, NULL, NULL);
static const record_kind chat_kind = RECORD_KIND(band_chat, chat_fields, NULL, NULL);
static const record_kind profile_kind = RECORD_KIND(band_profile, profile_fields, NULL, NULL);
static const record_kind agent_info_kind =
    RECORD_KIND(band_agent_info, agent_info_fields, NULL, NULL);

err_code band_message_from_json(const cJSON *obj, band_message *out, char *err)
{
    if (!out)
        return err_set(err, ERR_USAGE, "band_message_from_json: missing output");
    memset(out, 0, sizeof *out);
    return read_record(obj, out, &message_kind, err);
}

/* ---- readers of whole answers ------------------------------------------- */

static err_code read_message_page(const band_envelope *env, void *out, char *err)
{
    band_message_page *p = out;
    void *items;
    err_code rc = read_items(env->data, &message_kind, &items, &p->count, err);
    p->items = items;
    return rc != ERR_OK ? rc : take_page_info(env->metadata, &p->info, err);
}

static err_code read_agent_page(const band_envelope *env, void *out, char *err)
{
    band_agent_page *p = out;
    void *items;
    err_code rc = read_items(env->data, &agent_summary_kind, &items, &p->count, err);
    p->items = items;
    return rc != ERR_OK ? rc : take_page_info(env->metadata, &p->info, err);
}

static err_code read_chat_page(const band_envelope *env, void *out, char *err)
{
    band_chat_page *p = out;
    void *items;
    err_code rc = read_items(env->data, &chat_kind, &items, &p->count, err);
    p->items = items;
    return rc != ERR_OK ? rc : take_page_info(env->metadata, &p->info, err);
}

static err_code read_participants(const band_envelope *env, void *out, char *err)
{
    band_participant_list *l = out;
    void *items;
    err_code rc = read_items(env->data, &participant_kind, &items, &l->count, err);
    l->items = items;
    return rc;
}

static err_code read_profile(const band_envelope *env, void *out, char *err)
{
    return read_record(env->data, out, &profile_kind, err);
}

static err_code read_agent_info(const band_envelope *env, void *out, char *err)
{
    return read_record(env->data, out, &agent_info_kind, err);
}

static err_code read_next(const band_envelope *env, void *out, char *err)
{
    return env->no_content ? ERR_OK : read_record(env->data, out, &message_kind, err);
}

/* data.id into a BAND_ID_SZ buffer (NULL: only checked). */
static err_code read_id(const band_envelope *env, void *out, char *err)
{
    char id[BAND_ID_SZ];
    if (!cJSON_IsObject(env->data))
        return err_set(err, ERR_PROTOCOL, "\"data\" is not an object");
    err_code rc = take_text(env->data, "id", 1, id, sizeof id, err);
    if (rc == ERR_OK && out)
        memcpy(out, id, sizeof id);
    return rc;
}

/* The id first, so the caller can reap an agent whose key we then refuse.
 * The key is wiped from the parsed tree; band_http wipes the raw body. */
static err_code read_new_agent(const band_envelope *env, void *out, char *err)
{
    band_new_agent *a = out;
    const cJSON *agent = cJSON_GetObjectItemCaseSensitive(env->data, "agent");
    const cJSON *cred = cJSON_GetObjectItemCaseSensitive(env->data, "credentials");
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(cred, "api_key");
    err_code rc = take_fields(agent, a, new_agent_fields,
                              sizeof new_agent_fields / sizeof new_agent_fields[0], err);
    if (rc != ERR_OK)
        rc = err_wrap(err, rc, "agent");
    else if (!cJSON_IsObject(cred))
        rc = err_set(err, ERR_PROTOCOL, "\"credentials\" is missing");
    else
        rc = take_text(cred, "api_key", 1, a->api_key, sizeof a->api_key, err);
    if (cJSON_IsString(key))
        OPENSSL_cleanse(key->valuestring, strlen(key->valuestring));
    if (rc == ERR_OK)
        rc = protect_key(a->api_key, err);
    if (rc == ERR_USAGE)
        rc = err_set(err, ERR_PROTOCOL, "the minted key is too short to be masked");
    if (rc != ERR_OK)
        OPENSSL_cleanse(a->api_key, sizeof a->api_key);
    return rc;
}

/* ---- releasing records -------------------------------------------------- */

void band_message_clear(band_message *m)
{
    if (!m)
        return;
    free(m->content);
    memset(m, 0, sizeof *m);
}

void band_message_page_free(band_message_page *p)
{
    if (!p)
        return;
    for (size_t i = 0; p->items && i < p->count; i++)
        band_message_clear(&p->items[i]);
    free(p->items);
    memset(p, 0, sizeof *p);
}

void band_participant_list_free(band_participant_list *l)
{
    if (!l)
        return;
    free(l->items);
    memset(l, 0, sizeof *l);
}

void band_agent_page_free(band_agent_page *p)
{
    if (!p)
        return;
    free(p->items);
    memset(p, 0, sizeof *p);
}

void band_chat_page_free(band_chat_page *p)
{
    if (!p)
        return;
    free(p->items);
    memset(p, 0, sizeof *p);
}

/* ---- building requests ---------------------------------------------------- */

static err_code check_id(const char *id, const char *what, char *err)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n >= BAND_ID_SZ || strspn(id, ID_CHARS) != n)
        return err_set(err, ERR_USAGE, "%s is not a Band id", what);
    return ERR_OK;
}

static err_code format_path(char *path, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static err_code format_path(char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(path, PATH_SZ, fmt, ap);
    va_end(ap);
    return n > 0 && n < PATH_SZ ? ERR_OK : ERR_USAGE;
}

static int add_query(char *path, const char *key, const char *value)
{
    return band_http_add_query(path, PATH_SZ, key, value);
}

static int add_query_int(char *path, const char *key, long value)
{
    char text[24];
    snprintf(text, sizeof text, "%ld", value);
    return add_query(path, key, text);
}

typedef struct pair {
    const char *key, *value; /* a NULL value is left out */
} pair;

/* {"wrap": {pairs}} as compact JSON (malloc'd), or NULL when out of memory. */
static char *json_object(const char *wrap, const pair *pairs, size_t n)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *obj = wrap ? cJSON_AddObjectToObject(root, wrap) : root;
    int ok = obj != NULL;
    for (size_t i = 0; ok && i < n; i++)
        if (pairs[i].value)
            ok = cJSON_AddStringToObject(obj, pairs[i].key, pairs[i].value) != NULL;
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return text;
}

static err_code check_mentions(const band_mention *m, size_t n, char *err)
{
    if (!m || n == 0)
        return err_set(err, ERR_USAGE, "a message needs at least one mention");
    for (size_t i = 0; i < n; i++)
        if (check_id(m[i].id, "mention id", err) != ERR_OK)
            return ERR_USAGE;
    return ERR_OK;
}

static char *json_message(const char *content, const band_mention *m, size_t n)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *msg = cJSON_AddObjectToObject(root, "message");
    cJSON *list = msg && cJSON_AddStringToObject(msg, "content", content)
                      ? cJSON_AddArrayToObject(msg, "mentions")
                      : NULL;
    int ok = list != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        cJSON *one = cJSON_CreateObject();
        ok = cJSON_AddItemToArray(list, one) && cJSON_AddStringToObject(one, "id", m[i].id) &&
             (!m[i].name || cJSON_AddStringToObject(one, "name", m[i].name)) &&
             (!m[i].handle || cJSON_AddStringToObject(one, "handle", m[i].handle));
    }
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return text;
}

static err_code nomem(char *err)
{
    return err_set(err, ERR_NOMEM, "out of memory building a Band request");
}

static err_code bad_path(char *err)
{
    return err_set(err, ERR_USAGE, "a Band request path would exceed %d bytes", PATH_SZ);
}

/* A creating POST with a JSON body built by the caller (consumed). */
static err_code post_created(band_client *c, const char *path, char *json, reader read,
                             void *out, char *err)
{
    if (!json)
        return nomem(err);
    request rq = make_request(c, "POST", path, json, 1);
    err_code rc = run(c, &rq, read, out, err);
    free(json);
    return rc;
}

static err_code get(band_client *c, const char *path, reader read, void *out, char *err)
{
    request rq = make_request(c, "GET", path, NULL, 0);
    return run(c, &rq, read, out, err);
}

/* ---- user calls ------------------------------------------------------------ */

static err_code missing(const char *fn, char *err)
{
    return err_set(err, ERR_USAGE, "%s: a required argument is missing or out of range", fn);
}

err_code band_register_agent(band_client *c, const char *name, const char *description,
                             band_new_agent *out, char *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!c || !name || !name[0] || !out)
        return missing("band_register_agent", err);
    pair fields[] = {{"name", name}, {"description", description}};
    return post_created(c, "/api/v1/me/agents/register", json_object("agent", fields, 2),
                        read_new_agent, out, err);
}

err_code band_list_agents(band_client *c, const char *name, int limit, const char *cursor,
                          band_agent_page *out, char *err)
{
    char path[PATH_SZ] = "/api/v1/me/agents";
    if (out)
        memset(out, 0, sizeof *out);
    if (!c || !out || limit < 0)
        return missing("band_list_agents", err);
    if ((name && !add_query(path, "name", name)) ||
        (limit > 0 && !add_query_int(path, "limit", limit)) ||
        (cursor && cursor[0] && !add_query(path, "cursor", cursor)))
        return bad_path(err);
    return get(c, path, read_agent_page, out, err);
}

err_code band_delete_agent(band_client *c, const char *agent_id, int force, char *err)
{
    char path[PATH_SZ];
    if (!c)
        return missing("band_delete_agent", err);
    if (check_id(agent_id, "agent id", err))
        return ERR_USAGE;
    if (format_path(path, "/api/v1/me/agents/%s%s", agent_id, force ? "?force=true" : ""))
        return bad_path(err);
    request rq = make_request(c, "DELETE", path, NULL, 0);
    return run(c, &rq, NULL, NULL, err);
}

err_code band_create_chat(band_client *c, const char *title, char chat_id[BAND_ID_SZ],
                          char *err)
{
    if (chat_id)
        chat_id[0] = '\0';
    if (!c || !chat_id)
        return missing("band_create_chat", err);
    pair fields[] = {{"title", title}};
    return post_created(c, "/api/v1/me/chats", json_object("chat", fields, 1), read_id,
                        chat_id, err);
}

err_code band_add_participant(band_client *c, const char *chat_id,
                              const char *participant_id, const char *role, char *err)
{
    char path[PATH_SZ];
    if (!c)
        return missing("band_add_participant", err);
    if (check_id(chat_id, "chat id", err) || check_id(participant_id, "participant id", err))
        return ERR_USAGE;
    if (format_path(path, "/api/v1/me/chats/%s/participants", chat_id))
        return bad_path(err);
    pair fields[] = {{"participant_id", participant_id}, {"role", role ? role : "member"}};
    return post_created(c, path, json_object("participant", fields, 2), NULL, NULL, err);
}

/* The user and agent sides send messages alike, under different prefixes. */
static err_code send_message(band_client *c, const char *side, const char *chat_id,
                             const char *content, const band_mention *mentions, size_t n,
                             char message_id[BAND_ID_SZ], char *err)
{
    char path[PATH_SZ];
    if (message_id)
        message_id[0] = '\0';
    if (!c || !content || !message_id)
        return missing("sending a message", err);
    if (check_id(chat_id, "chat id", err) || check_mentions(mentions, n, err))
        return ERR_USAGE;
    if (format_path(path, "/api/v1/%s/chats/%s/messages", side, chat_id))
        return bad_path(err);
    return post_created(c, path, json_message(content, mentions, n), read_id, message_id, err);
}

err_code band_send_message(band_client *c, const char *chat_id, const char *content,
                           const band_mention *mentions, size_t n_mentions,
                           char message_id[BAND_ID_SZ], char *err)
{
    return send_message(c, "me", chat_id, content, mentions, n_mentions, message_id, err);
}

/* GET /api/v1/<side>/chats/{chat}<rest> into `out` with `read`. */
static err_code chat_get(band_client *c, const char *side, const char *chat_id,
                         const char *rest, reader read, void *out, char *err)
{
    char path[PATH_SZ];
    if (!c || !out)
        return missing("reading a chat", err);
    if (check_id(chat_id, "chat id", err))
        return ERR_USAGE;
    if (format_path(path, "/api/v1/%s/chats/%s%s", side, chat_id, rest))
        return bad_path(err);
    return get(c, path, read, out, err);
}

err_code band_list_messages(band_client *c, const char *chat_id, int limit,
                            band_message_page *out, char *err)
{
    char rest[48] = "/messages";
    if (out)
        memset(out, 0, sizeof *out);
    if (limit < 0)
        return missing("band_list_messages", err);
    if (limit > 0)
        snprintf(rest, sizeof rest, "/messages?limit=%d", limit);
    return chat_get(c, "me", chat_id, rest, read_message_page, out, err);
}

err_code band_delete_chat(band_client *c, const char *chat_id, char *err)
{
    char path[PATH_SZ];
    if (!c)
        return missing("band_delete_chat", err);
    if (check_id(chat_id, "chat id", err))
        return ERR_USAGE;
    if (format_path(path, "/api/v1/me/chats/%s", chat_id))
        return bad_path(err);
    request rq = make_request(c, "DELETE", path, NULL, 0);
    rq.any_2xx = 1;
    rq.http.timeout_ms = DELETE_CHAT_TIMEOUT_MS;
    return run(c, &rq, NULL, NULL, err);
}

err_code band_list_participants(band_client *c, const char *chat_id,
                                band_participant_list *out, char *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    return chat_get(c, "me", chat_id, "/participants", read_participants, out, err);
}

err_code band_get_profile(band_client *c, band_profile *out, char *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!c || !out)
        return missing("band_get_profile", err);
    return get(c, "/api/v1/me/profile", read_profile, out, err);
}

/* ---- agent calls ------------------------------------------------------------ */

err_code band_agent_me(band_client *c, band_agent_info *out, char *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!c || !out)
        return missing("band_agent_me", err);
    return get(c, "/api/v1/agent/me", read_agent_info, out, err);
}

/* The user's and the agent's room lists are one shape, numbered pages. */
static err_code chats_page(band_client *c, const char *side, const char *fn, int page,
                           int page_size, band_chat_page *out, char *err)
{
    char path[PATH_SZ];
    snprintf(path, sizeof path, "/api/v1/%s/chats", side);
    if (out)
        memset(out, 0, sizeof *out);
    if (!c || !out || page < 1 || page_size < 0)
        return missing(fn, err);
    if (!add_query_int(path, "page", page) ||
        (page_size > 0 && !add_query_int(path, "page_size", page_size)))
        return bad_path(err);
    return get(c, path, read_chat_page, out, err);
}

err_code band_list_chats(band_client *c, int page, int page_size, band_chat_page *out,
                         char *err)
{
    return chats_page(c, "me", "band_list_chats", page, page_size, out, err);
}

err_code band_agent_chats(band_client *c, int page, int page_size, band_chat_page *out,
                          char *err)
{
    return chats_page(c, "agent", "band_agent_chats", page, page_size, out, err);
}

err_code band_agent_participants(band_client *c, const char *chat_id,
                                 band_participant_list *out, char *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    return chat_get(c, "agent", chat_id, "/participants", read_participants, out, err);
}

err_code band_agent_context(band_client *c, const char *chat_id, band_message_page *out,
                            char *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    return chat_get(c, "agent", chat_id, "/context", read_message_page, out, err);
}

err_code band_agent_list_processing(band_client *c, const char *chat_id, int page,
                                    band_message_page *out, char *err)
{
    char rest[64];
    if (out)
        memset(out, 0, sizeof *out);
    if (page < 1)
        return missing("band_agent_list_processing", err);
    snprintf(rest, sizeof rest, "/messages?status=processing&page=%d", page);
    return chat_get(c, "agent", chat_id, rest, read_message_page, out, err);
}

err_code band_agent_next_message(band_client *c, const char *chat_id, band_message *out,
                                 int *found, char *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!found)
        return missing("band_agent_next_message", err);
    err_code rc = chat_get(c, "agent", chat_id, "/messages/next", read_next, out, err);
    *found = rc == ERR_OK && c->last.status != 204;
    return rc;
}

/* POST /api/v1/agent/chats/{chat}/messages/{id}/<what>. */
static err_code mark(band_client *c, const char *chat_id, const char *message_id,
                     const char *what, const char *json, char *err)
{
    char path[PATH_SZ];
    if (!c)
        return missing("marking a message", err);
    if (check_id(chat_id, "chat id", err) || check_id(message_id, "message id", err))
        return ERR_USAGE;
    if (format_path(path, "/api/v1/agent/chats/%s/messages/%s/%s", chat_id, message_id, what))
        return bad_path(err);
    request rq = make_request(c, "POST", path, json, 0);
    return run(c, &rq, NULL, NULL, err);
}

err_code band_agent_mark_processing(band_client *c, const char *chat_id,
                                    const char *message_id, char *err)
{
    return mark(c, chat_id, message_id, "processing", NULL, err);
}

err_code band_agent_mark_processed(band_client *c, const char *chat_id,
                                   const char *message_id, char *err)
{
    return mark(c, chat_id, message_id, "processed", NULL, err);
}

err_code band_agent_mark_failed(band_client *c, const char *chat_id, const char *message_id,
                                const char *error_text, char *err)
{
    pair fields[] = {{"error", error_text ? error_text : ""}};
    char *json = json_object(NULL, fields, 1);
    if (!json)
        return nomem(err);
    err_code rc = mark(c, chat_id, message_id, "failed", json, err);
    free(json);
    return rc;
}

err_code band_agent_activity(band_client *c, const char *chat_id, int working, char *err)
{
    char path[PATH_SZ];
    if (!c)
        return missing("band_agent_activity", err);
    if (check_id(chat_id, "chat id", err))
        return ERR_USAGE;
    if (format_path(path, "/api/v1/agent/chats/%s/activity", chat_id))
        return bad_path(err);
    request rq = make_request(c, "POST", path,
                              working ? "{\"working\":true}" : "{\"working\":false}", 0);
    rq.http.max_retries = 0;
    if (rq.http.timeout_ms > ACTIVITY_TIMEOUT_MS)
        rq.http.timeout_ms = ACTIVITY_TIMEOUT_MS;
    return run(c, &rq, NULL, NULL, err);
}

err_code band_agent_event(band_client *c, const char *chat_id, const char *content,
                          const char *message_type, char event_id[BAND_ID_SZ], char *err)
{
    char path[PATH_SZ];
    if (event_id)
        event_id[0] = '\0';
    if (!c || !content || !message_type)
        return missing("band_agent_event", err);
    if (check_id(chat_id, "chat id", err))
        return ERR_USAGE;
    if (format_path(path, "/api/v1/agent/chats/%s/events", chat_id))
        return bad_path(err);
    pair fields[] = {{"content", content}, {"message_type", message_type}};
    return post_created(c, path, json_object("event", fields, 2), read_id, event_id, err);
}

err_code band_agent_send_message(band_client *c, const char *chat_id, const char *content,
                                 const band_mention *mentions, size_t n_mentions,
                                 char message_id[BAND_ID_SZ], char *err)
{
    return send_message(c, "agent", chat_id, content, mentions, n_mentions, message_id, err);
}
