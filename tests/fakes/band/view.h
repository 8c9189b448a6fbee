/* view: the JSON shapes of protocol §3-5, built from the store.
 *
 * Every function returns a new cJSON tree the caller owns (or hands to an
 * envelope, which takes it). Timestamps are ISO-8601 UTC strings; absent
 * optional values are JSON null, as the platform sends them.
 */
#ifndef FAKE_BAND_VIEW_H
#define FAKE_BAND_VIEW_H

#include <cjson/cJSON.h>

#include "store.h"

/* MyAgent (register, list): id, name, description, handle, owner_id, ... */
cJSON *view_my_agent(const store_agent *a);

/* The answer to DELETE /me/agents/{id}. */
cJSON *view_deleted_agent(const store_agent *a, int executions_deleted);

/* AgentMe: handle owner/slug, owner_uuid, feature_flags {}. */
cJSON *view_agent_me(const store_agent *a);

/* GET /me/profile. */
cJSON *view_profile(const store_user *u);

/* ChatRoom / MeChatRoom; also the room_added payload. */
cJSON *view_room(const store_room *r);

/* room_removed payload: {id, status, title, removed_at}. */
cJSON *view_room_removed(const store_room *r, int64_t removed_ms);

/* ChatParticipant (with role and status); also participant_added. */
cJSON *view_participant(const store_participant *p);

/* A mention or a send-message recipient: {id, handle, name}. */
cJSON *view_recipient(const store_principal *who);

/* ChatMessage with metadata {mentions, status, delivery_status}; also the
 * message_created and message_updated payloads. */
cJSON *view_message(const store_message *m);

/* The lifecycle mark answer: {id, attempt_number, status, success}. */
cJSON *view_mark(const store_message *m, const store_attempt *a, const char *status);

#endif
