#include "inbox.h"

#include <stdlib.h>
#include <string.h>

void inbox_init(inbox *q)
{
    memset(q, 0, sizeof *q);
    q->tail = &q->head;
}

void inbox_item_free(inbox_item *it)
{
    if (!it)
        return;
    free(it->topic);
    free(it->event);
    free(it->reason);
    cJSON_Delete(it->payload);
    free(it);
}

inbox_item *inbox_pop(inbox *q)
{
    inbox_item *it = q->head;
    if (!it)
        return NULL;
    q->head = it->next;
    if (!q->head)
        q->tail = &q->head;
    q->count--;
    it->next = NULL;
    return it;
}

void inbox_clear(inbox *q)
{
    inbox_item *it;
    while ((it = inbox_pop(q)) != NULL)
        inbox_item_free(it);
}

static void append(inbox *q, inbox_item *it)
{
    *q->tail = it;
    q->tail = &it->next;
    q->count++;
}

/* Makes room for one more by dropping the oldest push, if it comes to it. */
static void make_room(inbox *q)
{
    if (q->count < INBOX_MAX)
        return;
    for (inbox_item **p = &q->head; *p; p = &(*p)->next) {
        inbox_item *it = *p;
        if (it->kind != INBOX_PUSH)
            continue;
        *p = it->next;
        if (q->tail == &it->next)
            q->tail = p;
        q->count--;
        q->dropped++;
        inbox_item_free(it);
        return;
    }
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

void inbox_on_push(const char *topic, const char *event, const cJSON *payload, void *ud)
{
    inbox *q = ud;
    inbox_item *it = calloc(1, sizeof *it);
    if (it) {
        it->kind = INBOX_PUSH;
        it->topic = strdup(topic);
        it->event = strdup(event);
        it->payload = cJSON_Duplicate(payload, 1);
    }
    if (!it || !it->topic || !it->event || !it->payload) {
        inbox_item_free(it);
        q->dropped++;
        return;
    }
    make_room(q);
    append(q, it);
}

void inbox_on_state(const phx_state_info *info, void *ud)
{
    inbox *q = ud;
    inbox_item *it = calloc(1, sizeof *it);
    if (it) {
        it->kind = INBOX_STATE;
        it->state = info->event;
        it->close_code = info->close_code;
        it->reason = strdup(info->reason);
        it->topic = dup_or_null(info->topic);
    }
    if (!it || !it->reason || (info->topic && !it->topic)) {
        inbox_item_free(it);
        q->lost_states++;
        return;
    }
    append(q, it);
}
