#include "store.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "must.h"

store *store_new(void)
{
    return must_calloc(1, sizeof(store));
}

static void free_message(store_message *m)
{
    for (size_t i = 0; i < m->deliveries.len; i++) {
        store_delivery *d = m->deliveries.items[i];
        for (size_t j = 0; j < d->attempts.len; j++) {
            store_attempt *a = d->attempts.items[j];
            free(a->error);
            free(a);
        }
        vec_release(&d->attempts);
        free(d);
    }
    vec_release(&m->deliveries);
    vec_release(&m->mentions);
    free(m->content);
    free(m->metadata_json);
    free(m);
}

static void free_room(store_room *r)
{
    for (size_t i = 0; i < r->participants.len; i++)
        free(r->participants.items[i]);
    vec_release(&r->participants);
    for (size_t i = 0; i < r->messages.len; i++)
        free_message(r->messages.items[i]);
    vec_release(&r->messages);
    free(r->title);
    free(r);
}

void store_free(store *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->rooms.len; i++)
        free_room(st->rooms.items[i]);
    for (size_t i = 0; i < st->agents.len; i++) {
        store_agent *a = st->agents.items[i];
        free(a->p.name);
        free(a->description);
        free(a);
    }
    for (size_t i = 0; i < st->users.len; i++) {
        store_user *u = st->users.items[i];
        free(u->p.name);
        free(u->email);
        free(u);
    }
    vec_release(&st->rooms);
    vec_release(&st->agents);
    vec_release(&st->users);
    free(st);
}

store_user *store_add_user(store *st, const char *key)
{
    if (!key || !*key || strlen(key) >= IDENT_KEY_SZ || store_by_key(st, key))
        return NULL;
    size_t n = st->users.len + 1;
    char suffix[24] = "";
    if (n > 1)
        snprintf(suffix, sizeof suffix, "-%zu", n);
    char name[64], email[96];
    snprintf(name, sizeof name, "Smoke User%s%s", n > 1 ? " " : "", n > 1 ? suffix + 1 : "");
    snprintf(email, sizeof email, "smoke-user%s@example.test", suffix);

    store_user *u = must_calloc(1, sizeof *u);
    u->p.kind = STORE_USER;
    ident_uuid(u->p.id);
    snprintf(u->p.key, sizeof u->p.key, "%s", key);
    snprintf(u->p.handle, sizeof u->p.handle, "smoke-user%s", suffix);
    u->p.name = must_strdup(name);
    u->email = must_strdup(email);
    u->p.inserted_ms = u->p.updated_ms = clock_wall_ms(NULL);
    vec_push(&st->users, u);
    return u;
}

/* Every live principal, users first: the one walk all lookups share. */
static store_principal *
find_principal(store *st, int (*match)(const store_principal *, const char *), const char *what)
{
    for (size_t i = 0; i < st->users.len; i++) {
        store_user *u = st->users.items[i];
        if (match(&u->p, what))
            return &u->p;
    }
    for (size_t i = 0; i < st->agents.len; i++) {
        store_agent *a = st->agents.items[i];
        if (!a->deleted && match(&a->p, what))
            return &a->p;
    }
    return NULL;
}

static int key_matches(const store_principal *p, const char *key)
{
    return p->key[0] && strcmp(p->key, key) == 0;
}

static int id_matches(const store_principal *p, const char *id)
{
    return strcmp(p->id, id) == 0;
}

static int handle_matches(const store_principal *p, const char *handle)
{
    return strcasecmp(p->handle, handle) == 0;
}

store_principal *store_by_key(store *st, const char *key)
{
    return key && *key ? find_principal(st, key_matches, key) : NULL;
}

store_principal *store_by_id(store *st, const char *id)
{
    return id ? find_principal(st, id_matches, id) : NULL;
}

store_principal *store_by_handle(store *st, const char *handle)
{
    if (!handle)
        return NULL;
    if (*handle == '@')
        handle++;
    return find_principal(st, handle_matches, handle);
}

store_agent *store_agent_by_id(store *st, const char *id)
{
    return store_as_agent(store_by_id(st, id));
}

store_agent *store_agent_named(store *st, const store_user *owner, const char *name)
{
    for (size_t i = 0; i < st->agents.len; i++) {
        store_agent *a = st->agents.items[i];
        if (!a->deleted && a->owner == owner && strcmp(a->p.name, name) == 0)
            return a;
    }
    return NULL;
}

/* The platform's slug: lower case, runs of other characters become '-'. */
static void slugify(const char *name, char *out, size_t cap)
{
    size_t n = 0;
    int dash = 0;
    for (const char *c = name; *c && n + 2 < cap; c++) {
        if (isalnum((unsigned char)*c)) {
            if (dash && n > 0)
                out[n++] = '-';
            out[n++] = (char)tolower((unsigned char)*c);
            dash = 0;
        } else {
            dash = 1;
        }
    }
    out[n] = '\0';
}

store_agent *store_register_agent(store *st, store_user *owner, const char *name,
                                  const char *description, int64_t inserted_ms)
{
    store_agent *a = must_calloc(1, sizeof *a);
    char slug[STORE_NAME_MAX + 2];
    slugify(name, slug, sizeof slug);
    a->p.kind = STORE_AGENT;
    ident_uuid(a->p.id);
    ident_api_key(a->p.key);
    if (st->keys_out) {
        fprintf(st->keys_out, "%s\n", a->p.key);
        fflush(st->keys_out);
    }
    /* User handles are short ("smoke-user-2"), so owner/slug always fits. */
    int n = snprintf(a->p.handle, sizeof a->p.handle, "%s/%s", owner->p.handle, slug);
    if (n < 0 || (size_t)n >= sizeof a->p.handle)
        abort();
    a->p.name = must_strdup(name);
    a->p.inserted_ms = inserted_ms;
    a->p.updated_ms = inserted_ms;
    a->owner = owner;
    a->description = must_strdup_or_null(description);
    a->seq = ++st->next_seq;
    vec_push(&st->agents, a);
    return a;
}

int store_delete_agent(store *st, store_agent *agent)
{
    for (size_t i = 0; i < st->rooms.len; i++)
        store_remove_participant(st->rooms.items[i], &agent->p);
    agent->deleted = 1;
    agent->p.key[0] = '\0';
    int executions = 0;
    for (size_t i = 0; i < st->rooms.len; i++) {
        store_room *r = st->rooms.items[i];
        for (size_t j = 0; j < r->messages.len; j++) {
            store_message *m = r->messages.items[j];
            for (size_t k = 0; k < m->deliveries.len; k++) {
                store_delivery *d = m->deliveries.items[k];
                if (d->agent == agent)
                    executions += (int)d->attempts.len;
            }
        }
    }
    return executions;
}

int store_live_agents_of(const store *st, const store_user *owner)
{
    int n = 0;
    for (size_t i = 0; i < st->agents.len; i++) {
        const store_agent *a = st->agents.items[i];
        n += !a->deleted && (!owner || a->owner == owner);
    }
    return n;
}

int store_live_agents(const store *st)
{
    return store_live_agents_of(st, NULL);
}

int store_live_rooms(const store *st)
{
    int n = 0;
    for (size_t i = 0; i < st->rooms.len; i++)
        n += !((store_room *)st->rooms.items[i])->deleted;
    return n;
}

store_room *store_create_room(store *st, store_user *owner, const char *title, int64_t now_ms)
{
    store_room *r = must_calloc(1, sizeof *r);
    ident_uuid(r->id);
    r->title = must_strdup_or_null(title);
    r->owner = owner;
    r->inserted_ms = r->updated_ms = now_ms;
    vec_push(&st->rooms, r);
    store_add_participant(r, &owner->p, "owner", now_ms);
    return r;
}

store_room *store_room_by_id(store *st, const char *id)
{
    for (size_t i = 0; id && i < st->rooms.len; i++) {
        store_room *r = st->rooms.items[i];
        if (!r->deleted && strcmp(r->id, id) == 0)
            return r;
    }
    return NULL;
}

void store_delete_room(store_room *room, int64_t now_ms)
{
    room->deleted = 1;
    room->updated_ms = now_ms;
}

store_participant *store_participant_of(const store_room *room, const store_principal *who)
{
    for (size_t i = 0; i < room->participants.len; i++) {
        store_participant *p = room->participants.items[i];
        if (p->who == who)
            return p;
    }
    return NULL;
}

store_participant *store_add_participant(store_room *room, store_principal *who, const char *role,
                                         int64_t now_ms)
{
    store_participant *p = store_participant_of(room, who);
    if (p)
        return p;
    p = must_calloc(1, sizeof *p);
    p->who = who;
    p->role = role;
    p->joined_ms = now_ms;
    vec_push(&room->participants, p);
    room->updated_ms = now_ms;
    return p;
}

int store_remove_participant(store_room *room, const store_principal *who)
{
    store_participant *p = store_participant_of(room, who);
    if (!p)
        return 0;
    vec_remove(&room->participants, p);
    free(p);
    return 1;
}

store_message *store_message_by_id(const store_room *room, const char *id)
{
    for (size_t i = 0; id && i < room->messages.len; i++) {
        store_message *m = room->messages.items[i];
        if (strcmp(m->id, id) == 0)
            return m;
    }
    return NULL;
}
