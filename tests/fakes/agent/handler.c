#include "handler.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sdklog.h"

/* Room for "no marker found in message content: '<content>'"; a longer
 * content is cut in the failure text, which only a human reads. */
#define WHY_SZ 2048
#define MARKER "marker:"
#define REPLY_PREFIX "sandbox-ack:"

void handler_init(handler *h, band_client *rest, const char *agent_id)
{
    memset(h, 0, sizeof *h);
    h->rest = rest;
    h->agent_id = agent_id;
    attempts_init(&h->tried);
}

void handler_free(handler *h)
{
    attempts_free(&h->tried);
}

int handler_tried(const handler *h, const char *message_id)
{
    return attempts_contains(&h->tried, message_id);
}

/* ---- the failure text ------------------------------------------------- */

typedef struct text {
    char *buf;
    size_t cap, len;
} text;

static void put(text *t, const char *s, size_t n)
{
    if (t->len + 1 >= t->cap)
        return;
    if (n > t->cap - 1 - t->len)
        n = t->cap - 1 - t->len;
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

static void put_str(text *t, const char *s)
{
    put(t, s, strlen(s));
}

/* Python's repr() of a str: agent.py quotes the content with !r, and the
 * platform shows that text as the attempt's error. */
static void put_repr(text *t, const char *s)
{
    char quote = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
    put(t, &quote, 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '\\' || *p == (unsigned char)quote)
            snprintf(esc, sizeof esc, "\\%c", *p);
        else if (*p == '\n')
            snprintf(esc, sizeof esc, "\\n");
        else if (*p == '\r')
            snprintf(esc, sizeof esc, "\\r");
        else if (*p == '\t')
            snprintf(esc, sizeof esc, "\\t");
        else if (*p < 0x20 || *p == 0x7f)
            snprintf(esc, sizeof esc, "\\x%02x", *p);
        else
            snprintf(esc, sizeof esc, "%c", *p);
        put_str(t, esc);
    }
    put(t, &quote, 1);
}

static void set_why(char *why, const char *prefix, const char *detail)
{
    snprintf(why, WHY_SZ, "%s%s", prefix, detail);
}

/* ---- the turn ---------------------------------------------------------- */

/* agent.py's MARKER.search(content): the first "marker:" followed by at
 * least one non-space; the token is that run of non-spaces. Malloc'd, or
 * NULL when there is none (or no memory, which fails the turn the same). */
static char *find_marker(const char *content)
{
    for (const char *p = strstr(content, MARKER); p; p = strstr(p + 1, MARKER)) {
        const char *start = p + strlen(MARKER), *end = start;
        while (*end && !isspace((unsigned char)*end))
            end++;
        if (end > start)
            return strndup(start, (size_t)(end - start));
    }
    return NULL;
}

/* agent.py's human_handle(): the first participant that is not an agent
 * and has a handle. */
static const band_participant *find_human(const band_participant_list *list)
{
    for (size_t i = 0; i < list->count; i++) {
        const band_participant *p = &list->items[i];
        if (strcmp(p->type, "Agent") != 0 && p->handle[0])
            return p;
    }
    return NULL;
}

/* Mentions the human by {id, handle}, as the SDK resolves a handle. */
static int send_reply(handler *h, const char *room_id, const char *token, char *why)
{
    band_participant_list people;
    char err[ERR_BUFSZ];
    if (band_agent_participants(h->rest, room_id, &people, err) != ERR_OK) {
        set_why(why, "band_get_participants failed: ", err);
        return -1;
    }
    int rc = -1;
    const band_participant *human = find_human(&people);
    size_t n = strlen(REPLY_PREFIX) + strlen(token) + 1;
    char *reply = malloc(n);
    if (!human) {
        set_why(why, "no human participant with a handle in the room", "");
    } else if (!reply) {
        set_why(why, "band_send_message failed: ", "out of memory");
    } else {
        snprintf(reply, n, "%s%s", REPLY_PREFIX, token);
        band_mention mention = {.id = human->id, .handle = human->handle};
        char sent_id[BAND_ID_SZ];
        if (band_agent_send_message(h->rest, room_id, reply, &mention, 1, sent_id, err) == ERR_OK)
            rc = 0;
        else
            set_why(why, "band_send_message failed: ", err);
    }
    free(reply);
    band_participant_list_free(&people);
    return rc;
}

/* agent.py's on_message: 0 when the reply went out, else -1 with why. */
static int run_turn(handler *h, const char *room_id, const band_message *m, char *why)
{
    char *token = find_marker(m->content);
    if (!token) {
        text t = {why, WHY_SZ, 0};
        why[0] = '\0';
        put_str(&t, "no marker found in message content: ");
        put_repr(&t, m->content);
        return -1;
    }
    int rc = send_reply(h, room_id, token, why);
    free(token);
    return rc;
}

/* The working indicator: failures only warn, once until one succeeds. */
static void report_activity(handler *h, const char *room_id, int working)
{
    char err[ERR_BUFSZ];
    if (band_agent_activity(h->rest, room_id, working, err) == ERR_OK) {
        h->activity_failing = 0;
        return;
    }
    if (!h->activity_failing)
        sdklog_warning(SDKLOG_WORKING, "Failed to report activity (working=%s) for room %s: "
                       "%s; suppressing repeat warnings until recovery",
                       sdklog_bool(working), room_id, err);
    h->activity_failing = 1;
}

static handler_outcome finish_turn(handler *h, const char *room_id, const char *id,
                                   int turn_rc, const char *why)
{
    char err[ERR_BUFSZ];
    if (turn_rc != 0) {
        sdklog_error(SDKLOG_ADAPTER, "Message %s failed: %s", id, why);
        if (band_agent_mark_failed(h->rest, room_id, id, why, err) != ERR_OK)
            sdklog_error(SDKLOG_ADAPTER, "Failed to mark message %s as failed: %s", id, err);
        return HANDLER_FAILED;
    }
    if (band_agent_mark_processed(h->rest, room_id, id, err) != ERR_OK) {
        sdklog_error(SDKLOG_ADAPTER, "Failed to mark message %s as processed: %s", id, err);
        return HANDLER_FAILED;
    }
    sdklog_info(SDKLOG_ADAPTER, "[DONE] Message %s processed successfully", id);
    return HANDLER_PROCESSED;
}

static int is_own(const handler *h, const band_message *m)
{
    return strcmp(m->sender_type, "Agent") == 0 && strcmp(m->sender_id, h->agent_id) == 0;
}

handler_outcome handler_handle(handler *h, const char *room_id, const band_message *m)
{
    char err[ERR_BUFSZ];
    if (is_own(h, m) || strcmp(m->message_type, "text") != 0 || handler_tried(h, m->id))
        return HANDLER_SKIPPED;
    sdklog_info(SDKLOG_ADAPTER, "[HANDLE] Message %s in room %s", m->id, room_id);
    if (band_agent_mark_processing(h->rest, room_id, m->id, err) != ERR_OK) {
        sdklog_warning(SDKLOG_ADAPTER, "Failed to mark message %s as processing: %s", m->id, err);
        return HANDLER_DEFERRED;
    }
    if (attempts_add(&h->tried, m->id, err) != ERR_OK)
        sdklog_warning(SDKLOG_ADAPTER, "Message %s may be attempted again: %s", m->id, err);
    report_activity(h, room_id, 1);
    char why[WHY_SZ] = "";
    int turn_rc = run_turn(h, room_id, m, why);
    report_activity(h, room_id, 0);
    return finish_turn(h, room_id, m->id, turn_rc, why);
}

/* The delivery status the platform shows for this agent, or NULL. */
static const char *own_delivery_status(const handler *h, const cJSON *payload)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(payload, "metadata");
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(meta, "delivery_status");
    const cJSON *mine = cJSON_GetObjectItemCaseSensitive(all, h->agent_id);
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(mine, "status");
    return cJSON_IsString(status) ? status->valuestring : NULL;
}

handler_outcome handler_handle_push(handler *h, const char *room_id, const cJSON *payload)
{
    band_message m;
    char err[ERR_BUFSZ];
    handler_outcome out = HANDLER_SKIPPED;
    if (band_message_from_json(payload, &m, err) != ERR_OK) {
        sdklog_error(SDKLOG_STREAMING, "[WebSocket] Invalid message_created payload: %s", err);
    } else {
        const char *status = own_delivery_status(h, payload);
        if (!status || strcmp(status, "processed") != 0)
            out = handler_handle(h, room_id, &m);
    }
    band_message_clear(&m);
    return out;
}
