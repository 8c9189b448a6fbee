/* band_rest: the Band REST API, as the smoke's user side and agent side use it.
 *
 * A band_client talks to one Band deployment with one API key: a user key
 * for the band_* user calls (/api/v1/me/...), an agent key for the
 * band_agent_* calls (/api/v1/agent/...). Paths and shapes follow
 * reference/band-protocol.md sections 2 to 4.
 *
 *   band_options o = band_options_default();
 *   band_client *band;
 *   if (band_client_new(cfg.rest_url, cfg.api_key_user, &o, &band, err)) ...;
 *   band_new_agent agent;
 *   err_code rc = band_register_agent(band, name, "E2E baseline test agent (sandbox)",
 *                                     &agent, err);
 *   if (agent.id[0]) save the id now, even when rc != ERR_OK;
 *   ...
 *   band_client_free(band);
 *
 * Every call returns an err_code and, on failure, a one-line message in
 * `err` (ERR_BUFSZ bytes) that starts with the method and path:
 * - ERR_OK: a 2xx answer whose body was what the call expects;
 * - ERR_HTTP: the server answered another status. The message reads
 *   "POST /api/v1/...: HTTP 422 mentions_required: <message> (request_id
 *   <id>)" when the body is Band's error envelope, else it quotes a short
 *   redacted excerpt of the body. band_last_result() has the status, the
 *   error code and the request id for callers that branch on them;
 * - ERR_PROTOCOL: a 2xx whose body is not the envelope {"data": ...}, or
 *   whose data lacks a field the call returns (2xx bodies are never quoted:
 *   one of them carries a freshly minted key);
 * - ERR_TIMEOUT: the call's deadline passed (options.timeout_ms), or one
 *   connection attempt's connect timeout with no retry left;
 * - ERR_NETWORK: no connection, or it broke (refused, DNS, TLS, proxy);
 * - ERR_USAGE: a missing argument, or an id that is not a Band id (letters,
 *   digits, '-' and '_' only: ids go into URL paths);
 * - ERR_NOMEM, and ERR_CONFIG / ERR_PRODUCTION from band_client_new.
 * Messages never contain a key: they pass through redact.
 *
 * Retries. A call is tried again, at most options.max_retries times and
 * never past its deadline, when the server answers 408, 429 or 5xx or the
 * connection fails in a way that can pass (refused, reset, DNS, timeout of
 * one attempt). The wait doubles from 500 ms up to 8 s with jitter (a
 * random point in the upper half; options.retry_base_ms and retry_cap_ms,
 * band_http.h has the constants), except
 * that a 429 or 503 with Retry-After waits exactly that long; when that is
 * longer than what is left of the deadline the call fails at once with the
 * 429/503. Which calls may be retried:
 * - reads (GET), deletes, and the message marks (repeating a mark is
 *   harmless: a second "processing" opens another attempt, a repeated
 *   "processed" is answered 422 while the message stays processed);
 * - calls that create something (register, create chat, add participant,
 *   send message, event) only when the request provably never left
 *   (connection refused, name not resolved), unless options.retry_creates
 *   accepts a possible duplicate, as the SDK's agent side does;
 * - band_agent_activity never: a late working indicator is worse than none.
 *
 * Ownership. Outputs are caller-provided structs, cleared on entry, so a
 * *_free or *_clear after any return is always safe. Fixed-size text fields
 * are NUL-terminated and never silently truncated: a longer value from the
 * server fails the call with ERR_PROTOCOL. Times are milliseconds since the
 * Unix epoch (0 when the server left an optional time out).
 *
 * Threads: a client is used by one thread at a time (see band_http.h for
 * curl_global_init).
 */
#ifndef SMOKE_BAND_REST_H
#define SMOKE_BAND_REST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "band_envelope.h"
#include "err.h"

#define BAND_ID_SZ 64      /* uuids, 36 chars */
#define BAND_NAME_SZ 256   /* names, handles, titles */
#define BAND_TEXT_SZ 1024  /* an agent's description */
#define BAND_KEY_SZ 256    /* a minted API key */
#define BAND_KIND_SZ 32    /* "User", "Agent", "member", "text", ... */
#define BAND_CURSOR_SZ 512 /* opaque paging cursors */

#define BAND_MAX_RETRIES 10

/* ---- the client ----------------------------------------------------------- */

typedef struct band_options {
    /* Deadline of one whole call, every attempt and every wait between
     * them included. > 0. Default 30000, like the toolkit. */
    long timeout_ms;
    /* Bound on establishing one connection (TCP, proxy tunnel, TLS), never
     * more than what is left of timeout_ms. > 0. Default 10000. */
    long connect_timeout_ms;
    /* Extra attempts after the first, for the calls that may be retried
     * (see above). 0..BAND_MAX_RETRIES. Default 0, like the SDK's user
     * toolkit; the agent side of the SDK uses 3. */
    int max_retries;
    /* 1: retry creating calls too, as reads are. Default 0. */
    int retry_creates;
    /* Backoff between retries: the first wait's step and the largest one.
     * 0 < base <= cap. Default BAND_HTTP_RETRY_BASE_MS (500) and
     * BAND_HTTP_RETRY_CAP_MS (8000), the SDK's; tests compress them. */
    long retry_base_ms;
    long retry_cap_ms;
    /* Where curl's verbose trace goes, redacted (header lines masked,
     * bodies and TLS records dropped; band_http.h). NULL = no trace.
     * Not owned; must outlive the client. */
    FILE *debug;
    /* A PEM CA bundle trusted besides the system store, e.g. for a
     * staging host behind a private CA. NULL = SMOKE_CA_FILE when set,
     * else the system store alone. Copied. */
    const char *ca_file;
} band_options;

/* The defaults above. */
band_options band_options_default(void);

typedef struct band_client band_client;

/* Creates a client for the Band REST base URL (http(s)://host[/prefix];
 * "/api/v1/..." is appended to it, a trailing slash is dropped) with one
 * API key, which is registered with redact at once. `opts` NULL means
 * band_options_default(). The key is copied and wiped on free.
 * ERR_USAGE: a missing argument, an empty key, options out of range.
 * ERR_CONFIG: the URL is not usable, or a proxy variable is malformed.
 * ERR_PRODUCTION: the URL is production Band (any app.band.ai host): this
 * suite talks to staging only, and this is the one gate every REST call
 * passes. ERR_FULL: redact's registry is full. ERR_NOMEM.
 * On success *out is the caller's; release it with band_client_free. */
err_code band_client_new(const char *base_url, const char *api_key,
                         const band_options *opts, band_client **out, char *err);

/* Releases the client and wipes its copy of the key. NULL is a no-op. */
void band_client_free(band_client *c);

/* What the last call on this client saw; see band_last_result(). */
typedef struct band_result {
    long status;                   /* HTTP status of the last attempt; 0 when none came */
    char code[BAND_CODE_SZ];       /* error.code of an error envelope, else "" */
    char request_id[BAND_CODE_SZ]; /* error.request_id, else "" */
    int attempts;                  /* requests sent: 1 + retries */
    int64_t waited_ms;             /* time slept between attempts */
    int64_t elapsed_ms;            /* the whole call */
} band_result;

/* Borrowed from the client; overwritten by its next call that sends
 * something (a call refused with ERR_USAGE sends nothing and leaves the
 * previous result). Never NULL for a non-NULL client. */
const band_result *band_last_result(const band_client *c);

/* Shortcut: band_last_result(c)->status (0 for a NULL client). */
long band_last_status(const band_client *c);

/* ---- any endpoint ---------------------------------------------------------- */

/* Any Band endpoint this module does not wrap: `path` starts with
 * "/api/v1/", `json` is the body or NULL. GET and DELETE are retried as
 * reads, anything else as a creating call. `out` as from
 * band_envelope_parse (release with band_envelope_free). */
err_code band_call(band_client *c, const char *method, const char *path,
                   const char *json, band_envelope *out, char *err);

/* ---- shared records ------------------------------------------------------- */

typedef struct band_page_info {
    int has_more;                      /* cursor paging */
    char next_cursor[BAND_CURSOR_SZ];  /* "" when none */
    int page, page_size;               /* numbered paging; 0 when absent */
    int total_pages, total_count;
} band_page_info;

typedef struct band_message {
    char id[BAND_ID_SZ];
    char *content;                     /* owned, never NULL after a successful parse */
    char message_type[BAND_KIND_SZ];   /* "text", "tool_call", ... */
    char sender_id[BAND_ID_SZ];
    char sender_type[BAND_KIND_SZ];    /* "User" or "Agent" */
    char sender_name[BAND_NAME_SZ];    /* "" when absent */
    char chat_room_id[BAND_ID_SZ];     /* "" when absent */
    int64_t inserted_at_ms;            /* 0 when absent */
} band_message;

/* Reads one ChatMessage object, as REST lists carry it and as WebSocket
 * message_created pushes carry it, into *out (cleared first; release with
 * band_message_clear whatever the return). ERR_PROTOCOL names the field
 * that is missing or malformed; ERR_NOMEM. */
err_code band_message_from_json(const cJSON *obj, band_message *out, char *err);

/* Frees content and zeroes the record. */
void band_message_clear(band_message *m);

typedef struct band_message_page {
    band_message *items;               /* owned; count of them */
    size_t count;
    band_page_info info;
} band_message_page;

void band_message_page_free(band_message_page *p);

typedef struct band_participant {
    char id[BAND_ID_SZ];
    char name[BAND_NAME_SZ];           /* "" when absent */
    char type[BAND_KIND_SZ];           /* "User" or "Agent" */
    char handle[BAND_NAME_SZ];         /* "" when absent or null */
    char role[BAND_KIND_SZ];           /* "owner", "admin", "member"; "" when absent */
} band_participant;

typedef struct band_participant_list {
    band_participant *items;           /* owned */
    size_t count;
} band_participant_list;

void band_participant_list_free(band_participant_list *l);

/* A mention inside a message: id required; name and handle are sent when
 * not NULL (users mention {id, name}, agents {id, handle}). */
typedef struct band_mention {
    const char *id;
    const char *name;
    const char *handle;
} band_mention;

/* ---- user calls (user key, /api/v1/me/...) ------------------------------ */

typedef struct band_new_agent {
    char id[BAND_ID_SZ];
    char name[BAND_NAME_SZ];
    /* SECRET: the agent's key, shown by Band once. Already registered with
     * redact when the call returns; the caller owns this copy and should
     * wipe it (OPENSSL_cleanse) once it is handed on. */
    char api_key[BAND_KEY_SZ];
} band_new_agent;

/* POST /me/agents/register {"agent":{name, description}} -> 201. Creating.
 * out->id is filled as soon as Band says the agent exists, even when the
 * call then fails (the key is missing, or redact refuses it): the caller
 * must save and reap it whenever out->id[0] != '\0'. */
err_code band_register_agent(band_client *c, const char *name, const char *description,
                             band_new_agent *out, char *err);

typedef struct band_agent_summary {
    char id[BAND_ID_SZ];
    char name[BAND_NAME_SZ];
    int64_t inserted_at_ms;
    int64_t updated_at_ms;             /* 0 when absent */
    int is_external;
} band_agent_summary;

typedef struct band_agent_page {
    band_agent_summary *items;         /* owned */
    size_t count;
    band_page_info info;               /* has_more, next_cursor */
} band_agent_page;

void band_agent_page_free(band_agent_page *p);

/* GET /me/agents?name=&limit=&cursor= -> one page of the caller's own
 * agents, newest first. `name` is Band's case-insensitive substring filter
 * (NULL = all), limit 0 = Band's default, cursor NULL or "" = first page. */
err_code band_list_agents(band_client *c, const char *name, int limit, const char *cursor,
                          band_agent_page *out, char *err);

/* DELETE /me/agents/{id}[?force=true]. Without force Band answers 422 for
 * an agent with history. A 404 means it is already gone; the caller
 * decides whether that counts as reaped. */
err_code band_delete_agent(band_client *c, const char *agent_id, int force, char *err);

/* POST /me/chats {"chat":{title}} -> the room id. title NULL = untitled
 * (Band then titles it itself). Creating. */
err_code band_create_chat(band_client *c, const char *title, char chat_id[BAND_ID_SZ],
                          char *err);

/* POST /me/chats/{chat}/participants {"participant":{participant_id, role}}.
 * role NULL = "member". Creating. */
err_code band_add_participant(band_client *c, const char *chat_id,
                              const char *participant_id, const char *role, char *err);

/* POST /me/chats/{chat}/messages {"message":{content, mentions}} -> the new
 * message id. Content is sent as given (the probe writes "@name marker:..."
 * itself). At least one mention: Band rejects a message without one.
 * Creating. */
err_code band_send_message(band_client *c, const char *chat_id, const char *content,
                           const band_mention *mentions, size_t n_mentions,
                           char message_id[BAND_ID_SZ], char *err);

/* GET /me/chats/{chat}/messages?limit= -> newest first. limit 0 = Band's
 * default. For a probe that checks for a reply without a WebSocket. */
err_code band_list_messages(band_client *c, const char *chat_id, int limit,
                            band_message_page *out, char *err);

/* DELETE /me/chats/{chat}: any 2xx is success, whatever the body, with its
 * own 30 s deadline, as the SDK toolkit's hand-rolled call. 404 = gone. */
err_code band_delete_chat(band_client *c, const char *chat_id, char *err);

/* GET /me/chats/{chat}/participants. */
err_code band_list_participants(band_client *c, const char *chat_id,
                                band_participant_list *out, char *err);

typedef struct band_profile {
    char id[BAND_ID_SZ];
    char handle[BAND_NAME_SZ];         /* "" when absent */
} band_profile;

/* GET /me/chats?page=&page_size= (page >= 1; page_size 0 = Band's default):
 * the rooms the user takes part in, in numbered pages (band_chat_page,
 * defined below; total_pages 0 = one page). Not in the reference's list of
 * toolkit calls: band_rest 0.0.26 has it as human_api_chats.list_my_chats
 * (ListMyChatsResponse: ChatRoom items {id, inserted_at, updated_at,
 * title?, task_id?}; metadata page, page_size, total_count, total_pages).
 * Band has no title filter: callers page through. */
typedef struct band_chat_page band_chat_page;
err_code band_list_chats(band_client *c, int page, int page_size, band_chat_page *out,
                         char *err);

/* GET /me/profile: who the user key belongs to. */
err_code band_get_profile(band_client *c, band_profile *out, char *err);

/* ---- agent calls (agent key, /api/v1/agent/...) ---------------------------- */

typedef struct band_agent_info {
    char id[BAND_ID_SZ];
    char name[BAND_NAME_SZ];
    char handle[BAND_NAME_SZ];         /* "owner/slug" */
    char description[BAND_TEXT_SZ];    /* "" when absent: the SDK refuses to start then */
    char owner_uuid[BAND_ID_SZ];
} band_agent_info;

/* GET /agent/me. */
err_code band_agent_me(band_client *c, band_agent_info *out, char *err);

typedef struct band_chat {
    char id[BAND_ID_SZ];
    char title[BAND_NAME_SZ];          /* "" when absent */
} band_chat;

struct band_chat_page {
    band_chat *items;                  /* owned */
    size_t count;
    band_page_info info;               /* page, total_pages (0 = one page) */
};

void band_chat_page_free(band_chat_page *p);

/* GET /agent/chats?page=&page_size= (page >= 1; page_size 0 = Band's default). */
err_code band_agent_chats(band_client *c, int page, int page_size, band_chat_page *out,
                          char *err);

/* GET /agent/chats/{chat}/participants. */
err_code band_agent_participants(band_client *c, const char *chat_id,
                                 band_participant_list *out, char *err);

/* GET /agent/chats/{chat}/context: history, oldest first. */
err_code band_agent_context(band_client *c, const char *chat_id, band_message_page *out,
                            char *err);

/* GET /agent/chats/{chat}/messages?status=processing&page= (page >= 1):
 * messages left in processing, for the stale sweep. */
err_code band_agent_list_processing(band_client *c, const char *chat_id, int page,
                                    band_message_page *out, char *err);

/* GET /agent/chats/{chat}/messages/next: *found = 1 and *out filled for a
 * 200, *found = 0 for Band's 204 "nothing pending" (ERR_OK both). Release
 * with band_message_clear. */
err_code band_agent_next_message(band_client *c, const char *chat_id, band_message *out,
                                 int *found, char *err);

/* POST /agent/chats/{chat}/messages/{id}/processing | processed (no body)
 * and /failed {"error": text}. Retried as reads (see above). */
err_code band_agent_mark_processing(band_client *c, const char *chat_id,
                                    const char *message_id, char *err);
err_code band_agent_mark_processed(band_client *c, const char *chat_id,
                                   const char *message_id, char *err);
err_code band_agent_mark_failed(band_client *c, const char *chat_id, const char *message_id,
                                const char *error_text, char *err);

/* POST /agent/chats/{chat}/activity {"working": bool}: the typing
 * indicator. At most 2 s (less when options.timeout_ms is smaller), never
 * retried; callers usually ignore its failures, as the SDK does. */
err_code band_agent_activity(band_client *c, const char *chat_id, int working, char *err);

/* POST /agent/chats/{chat}/events {"event":{content, message_type}}:
 * message_type is "tool_call", "tool_result", "thought", "error" or
 * "task" (not checked here). event_id may be NULL. Creating. */
err_code band_agent_event(band_client *c, const char *chat_id, const char *content,
                          const char *message_type, char event_id[BAND_ID_SZ], char *err);

/* POST /agent/chats/{chat}/messages {"message":{content, mentions}}: the
 * agent's reply; at least one mention ({id, handle}). Creating. */
err_code band_agent_send_message(band_client *c, const char *chat_id, const char *content,
                                 const band_mention *mentions, size_t n_mentions,
                                 char message_id[BAND_ID_SZ], char *err);

#endif
