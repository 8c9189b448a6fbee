/* rest_internal: what the route table (rest.c) shares with its handlers
 * (rest_me_agents.c and rest_me_chats.c for users, rest_agent.c for
 * agents). Not for other modules.
 *
 * A handler gets a rest_ctx with the caller already authenticated and the
 * path's wildcard segments in args; it answers through c->resp. Helpers
 * that refuse something answer the request themselves and return NULL or
 * -1, so handlers read as a straight line of early returns.
 */
#ifndef FAKE_BAND_REST_INTERNAL_H
#define FAKE_BAND_REST_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "chat.h"
#include "http.h"
#include "reply.h"
#include "server.h"
#include "store.h"

#define REST_ARG_SZ 80
#define REST_ARGS_MAX 2

typedef struct rest_ctx {
    server *srv;
    store *st;
    const http_request *req;
    http_response *resp;
    store_principal *who;                  /* the caller */
    char args[REST_ARGS_MAX][REST_ARG_SZ]; /* the path's '*' segments, in order */
    const char *tag;                       /* the route's tag (which mark, ...) */
    cJSON *body;                           /* set by rest_body */
    int64_t now_ms;
} rest_ctx;

/* The caller, as the route's kind of principal. */
static inline store_user *rest_user(const rest_ctx *c)
{
    return store_as_user(c->who);
}
static inline store_agent *rest_agent(const rest_ctx *c)
{
    return store_as_agent(c->who);
}

/* The request body as JSON, kept in c->body. NULL with nothing answered
 * when there is no body and `required` is 0; NULL after answering 400
 * (not JSON), 413 (too large) or 422 (missing, or not an object). */
cJSON *rest_body(rest_ctx *c, int required);

/* The object member `name` of a body from rest_body(c, 1): 422 when it is
 * missing or not an object; NULL without answering when body is NULL
 * (rest_body answered already). */
const cJSON *rest_member(rest_ctx *c, const cJSON *body, const char *name);

/* A string member of obj: NULL when absent or null; *bad set (and NULL)
 * when of another type or longer than `max` bytes. */
const char *rest_string(const cJSON *obj, const char *name, size_t max, int *bad);

/* Integer query parameter within [lo, hi], `fallback` when absent;
 * -1 after answering 422. */
int rest_int_param(rest_ctx *c, const char *name, int fallback, int lo, int hi, int *out);

/* A live room the caller is in: 404 when there is none, 403 when the
 * caller is not a participant (NULL after answering). */
store_room *rest_room(rest_ctx *c, const char *id);

/* Answers a chat refusal. */
void rest_chat_error(rest_ctx *c, const chat_error *err);

/* Page metadata: page, page_size, total_count, total_pages, plus the
 * cursor-style has_more / limit / next_cursor (null) every list carries. */
cJSON *rest_page_metadata(int page, int page_size, int total);

/* Every participant of the room, with page metadata (users and agents). */
void rest_list_participants(rest_ctx *c, const store_room *room);

/* 201 {id, recipients, success} for a message just sent, after pushing it. */
void rest_message_sent(rest_ctx *c, store_message *m);

/* The caller's rooms, user or agent alike (rest_me_chats.c). */
void rest_list_chats(rest_ctx *c);

/* User handlers (rest_me_agents.c, rest_me_chats.c). */
void rest_me_register(rest_ctx *c);
void rest_me_list_agents(rest_ctx *c);
void rest_me_delete_agent(rest_ctx *c);
void rest_me_profile(rest_ctx *c);
void rest_me_create_chat(rest_ctx *c);
void rest_me_delete_chat(rest_ctx *c);
void rest_me_participants(rest_ctx *c);
void rest_me_add_participant(rest_ctx *c);
void rest_me_remove_participant(rest_ctx *c);
void rest_me_messages(rest_ctx *c);
void rest_me_send(rest_ctx *c);

/* Agent handlers (rest_agent.c). */
void rest_agent_me(rest_ctx *c);
void rest_agent_participants(rest_ctx *c);
void rest_agent_context(rest_ctx *c);
void rest_agent_messages(rest_ctx *c);
void rest_agent_next(rest_ctx *c);
void rest_agent_mark(rest_ctx *c);
void rest_agent_activity(rest_ctx *c);
void rest_agent_event(rest_ctx *c);
void rest_agent_send(rest_ctx *c);

#endif
