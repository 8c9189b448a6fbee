#include "rooms.h"

#include <stdlib.h>
#include <string.h>

#include "link.h"
#include "sdklog.h"

#define PAGE_SIZE 100
#define MAX_PAGES 50
#define CHAT_ROOM "chat_room"
#define PARTICIPANTS "room_participants"

void rooms_init(rooms *s)
{
    memset(s, 0, sizeof *s);
}

void rooms_free(rooms *s)
{
    free(s->items);
    rooms_init(s);
}

room *rooms_find(rooms *s, const char *id)
{
    for (size_t i = 0; i < s->count; i++)
        if (strcmp(s->items[i].id, id) == 0)
            return &s->items[i];
    return NULL;
}

room *rooms_find_topic(rooms *s, const char *topic)
{
    const char *colon = strchr(topic, ':');
    if (!colon)
        return NULL;
    size_t prefix = (size_t)(colon - topic);
    int ours = (prefix == strlen(CHAT_ROOM) && strncmp(topic, CHAT_ROOM, prefix) == 0) ||
               (prefix == strlen(PARTICIPANTS) && strncmp(topic, PARTICIPANTS, prefix) == 0);
    return ours ? rooms_find(s, colon + 1) : NULL;
}

static err_code add(rooms *s, const char *id, char *err)
{
    if (strlen(id) >= BAND_ID_SZ)
        return err_set(err, ERR_USAGE, "room id longer than %d bytes", BAND_ID_SZ - 1);
    if (s->count == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4;
        room *grown = realloc(s->items, cap * sizeof *grown);
        if (!grown)
            return err_set(err, ERR_NOMEM, "out of memory adding room %s", id);
        s->items = grown;
        s->cap = cap;
    }
    room *r = &s->items[s->count++];
    memset(r, 0, sizeof *r);
    memcpy(r->id, id, strlen(id) + 1);
    return ERR_OK;
}

static err_code fetch_page(band_client *rest, int page, rooms *out, int *pages, char *err)
{
    band_chat_page p;
    err_code rc = band_agent_chats(rest, page, PAGE_SIZE, &p, err);
    for (size_t i = 0; rc == ERR_OK && i < p.count; i++)
        if (!rooms_find(out, p.items[i].id))
            rc = add(out, p.items[i].id, err);
    *pages = p.info.total_pages;
    band_chat_page_free(&p);
    return rc;
}

err_code rooms_fetch(band_client *rest, rooms *out, char *err)
{
    rooms_init(out);
    int total = 1;
    for (int page = 1; page <= total && page <= MAX_PAGES; page++) {
        err_code rc = fetch_page(rest, page, out, &total, err);
        if (rc != ERR_OK) {
            rooms_free(out);
            return rc;
        }
    }
    return ERR_OK;
}

err_code rooms_join(rooms *s, phx_client *phx, const char *id, char *err)
{
    if (rooms_find(s, id))
        return err_set(err, ERR_USAGE, "room %s is served already", id);
    if (strlen(id) >= BAND_ID_SZ)
        return err_set(err, ERR_USAGE, "room id longer than %d bytes", BAND_ID_SZ - 1);
    char messages[LINK_TOPIC_SZ], members[LINK_TOPIC_SZ], ignored[ERR_BUFSZ];
    link_topic(messages, CHAT_ROOM, id);
    link_topic(members, PARTICIPANTS, id);
    err_code rc = link_join(phx, messages, 0, err);
    if (rc != ERR_OK)
        return rc;
    if ((rc = link_join(phx, members, 0, err)) == ERR_OK && (rc = add(s, id, err)) == ERR_OK) {
        sdklog_info(SDKLOG_PRESENCE, "Agent joined room: %s", id);
        return ERR_OK;
    }
    (void)phx_leave(phx, messages, 0, ignored); /* the first join must not outlive a failure */
    return rc;
}

err_code rooms_leave(rooms *s, phx_client *phx, const char *id, char *err)
{
    room *r = rooms_find(s, id);
    if (!r)
        return err_set(err, ERR_NOTFOUND, "room %s is not served", id);
    char messages[LINK_TOPIC_SZ], members[LINK_TOPIC_SZ], why[ERR_BUFSZ];
    link_topic(messages, CHAT_ROOM, r->id);
    link_topic(members, PARTICIPANTS, r->id);
    /* forget first: r points into the array */
    *r = s->items[--s->count];
    err_code rc = ERR_OK;
    err_code one = phx_leave(phx, members, 0, why);
    if (one != ERR_OK && one != ERR_NOTFOUND)
        rc = err_set(err, one, "%s", why);
    one = phx_leave(phx, messages, 0, why);
    if (one != ERR_OK && one != ERR_NOTFOUND && rc == ERR_OK)
        rc = err_set(err, one, "%s", why);
    return rc;
}
