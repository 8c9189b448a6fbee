/* store: everything the fake Band platform remembers, in memory.
 *
 * Users come from the key files given on the command line; agents are
 * registered by users; rooms are created by users and hold participants
 * (users and agents) and messages; each message tracks, per mentioned
 * agent, its delivery state and processing attempts.
 *
 * Users and agents share a header, store_principal, as their first member,
 * so a participant, a mention or a message sender points at either one and
 * `kind` says which (cast with store_as_agent / store_as_user).
 *
 * Nothing is ever freed before store_free: a deleted agent or room is only
 * marked `deleted` (an agent also loses its key), so pointers held by
 * sockets and messages stay valid for the life of the process. Lookups by
 * key or id skip deleted things. The tables are public for reading;
 * change them only through these functions and chat.h.
 */
#ifndef FAKE_BAND_STORE_H
#define FAKE_BAND_STORE_H

#include <stdint.h>
#include <stdio.h>

#include "ident.h"
#include "vec.h"

#define STORE_NAME_MAX 100 /* longest agent name or room title kept */
#define STORE_DESCRIPTION_MAX 2000
#define STORE_HANDLE_SZ 256

typedef enum store_kind { STORE_USER, STORE_AGENT } store_kind;

typedef struct store_principal {
    store_kind kind;
    char id[IDENT_UUID_SZ];
    char key[IDENT_KEY_SZ];       /* "" once revoked */
    char handle[STORE_HANDLE_SZ]; /* users: "smoke-user"; agents: "owner/slug" */
    char *name;
    int64_t inserted_ms;
    int64_t updated_ms;
} store_principal;

typedef struct store_user {
    store_principal p;
    char *email;
} store_user;

typedef struct store_agent {
    store_principal p;
    store_user *owner;
    char *description; /* NULL when registered without one */
    uint64_t seq;      /* creation order: the tie-break of "newest first" */
    int deleted;
    int history; /* attempts, messages and events: delete needs force */
} store_agent;

typedef struct store_participant {
    store_principal *who;
    const char *role; /* "owner", "admin" or "member": a static string */
    int64_t joined_ms;
} store_participant;

typedef enum store_delivery_state {
    STORE_PENDING, /* not yet handed to the agent */
    STORE_DELIVERED,
    STORE_PROCESSING,
    STORE_PROCESSED,
    STORE_FAILED
} store_delivery_state;

typedef struct store_attempt {
    int number;         /* 1, 2, ... */
    const char *status; /* "processing", "success" or "failed" */
    char *error;        /* the agent's text for "failed", else NULL */
} store_attempt;

typedef struct store_message store_message;

typedef struct store_delivery {
    store_message *message;
    store_agent *agent;
    store_delivery_state state;
    int64_t delivered_ms; /* 0 = not yet */
    int64_t processed_ms; /* 0 = not yet */
    vec attempts;         /* store_attempt*, oldest first */
} store_delivery;

typedef struct store_room store_room;

struct store_message {
    char id[IDENT_UUID_SZ];
    store_room *room;
    store_principal *sender;
    char *content;
    char message_type[16]; /* "text", or an event type: "tool_call", ... */
    char *metadata_json;   /* an event's own metadata object, else NULL */
    int64_t inserted_ms;
    int64_t updated_ms;
    vec mentions;   /* store_principal*, as resolved at send time */
    vec deliveries; /* store_delivery*, one per mentioned agent */
};

struct store_room {
    char id[IDENT_UUID_SZ];
    char *title; /* NULL when created without one */
    store_user *owner;
    int64_t inserted_ms;
    int64_t updated_ms;
    int64_t last_message_ms; /* 0 = no message yet */
    int deleted;
    vec participants; /* store_participant*, in joining order */
    vec messages;     /* store_message*, oldest first */
};

typedef struct store {
    vec users;  /* store_user*, in key-file order */
    vec agents; /* store_agent*, in creation order, deleted ones too */
    vec rooms;  /* store_room*, in creation order, deleted ones too */
    uint64_t next_seq;
    FILE *keys_out; /* --keys-out: every minted agent key, one per line; for
                       the rehearsal's canary scan only. NULL = not kept */
} store;

store *store_new(void);
void store_free(store *st);

/* Adds the user owning `key` (one per --user-key-file, numbered from 1):
 * handle "smoke-user" (then "smoke-user-2", ...), name "Smoke User" (then
 * "Smoke User 2", ...). NULL when the key is empty or already known. */
store_user *store_add_user(store *st, const char *key);

/* The live user or agent holding `key`; NULL for unknown or revoked. */
store_principal *store_by_key(store *st, const char *key);

/* Live principals by id, and by handle (a leading '@' is ignored). */
store_principal *store_by_id(store *st, const char *id);
store_principal *store_by_handle(store *st, const char *handle);
store_agent *store_agent_by_id(store *st, const char *id);

static inline store_agent *store_as_agent(store_principal *p)
{
    return p && p->kind == STORE_AGENT ? (store_agent *)p : NULL;
}
static inline store_user *store_as_user(store_principal *p)
{
    return p && p->kind == STORE_USER ? (store_user *)p : NULL;
}

/* The live agent of `owner` with this name (names are unique per owner
 * because the handle is built from them), or NULL. */
store_agent *store_agent_named(store *st, const store_user *owner, const char *name);

/* A new agent with a fresh id and key. `inserted_ms` backdates it (the
 * orphan-sweep tests need old agents); pass the current time otherwise. */
store_agent *store_register_agent(store *st, store_user *owner, const char *name,
                                  const char *description, int64_t inserted_ms);

/* Marks the agent deleted, revokes its key and takes it out of every room.
 * Returns how many executions (attempts) its history held. */
int store_delete_agent(store *st, store_agent *agent);

/* Counts of things created and not deleted (owner NULL: everyone's). */
int store_live_agents(const store *st);
int store_live_agents_of(const store *st, const store_user *owner);
int store_live_rooms(const store *st);

/* A new room whose owner is its first participant (role "owner"). */
store_room *store_create_room(store *st, store_user *owner, const char *title, int64_t now_ms);
store_room *store_room_by_id(store *st, const char *id); /* live rooms only */
void store_delete_room(store_room *room, int64_t now_ms);

/* Room membership. add returns the existing entry when already there;
 * `role` must outlive the store (a string literal). */
store_participant *store_participant_of(const store_room *room, const store_principal *who);
store_participant *store_add_participant(store_room *room, store_principal *who, const char *role,
                                         int64_t now_ms);
int store_remove_participant(store_room *room, const store_principal *who);

/* Messages of a room by id; NULL when not in that room. */
store_message *store_message_by_id(const store_room *room, const char *id);

#endif
