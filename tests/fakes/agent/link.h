/* link: the agent's WebSocket to Band, as band.platform.link runs it.
 *
 * A thin layer over support/phoenix.h that builds the client from the
 * settings (agent_id in the URL, the test knobs for keepalive, heartbeat
 * and reconnect), routes its callbacks into the inbox, bounds the first
 * connection like the SDK (11 attempts with backoff, band-protocol.md
 * 8.1) and writes the SDK's lines around each subscription:
 *   INFO band.client.streaming.client: [WebSocket] Subscribing to topic: T
 *   INFO phoenix_channels_python_client.client: Successfully subscribed to topic T
 *   INFO band.client.streaming.client: [WebSocket] Subscribed to topic: T
 * (the last only for the agent's own topics, as the SDK).
 *
 * Reconnects and rejoins are phoenix's; what they mean to the agent is
 * agent.c's. The phx_client is the caller's: release it with
 * phx_client_free. The inbox must outlive it.
 */
#ifndef FAKE_AGENT_LINK_H
#define FAKE_AGENT_LINK_H

#include <signal.h>

#include "err.h"
#include "inbox.h"
#include "phoenix.h"
#include "policy.h"
#include "settings.h"

/* "prefix:id" topics; Band ids are short. */
#define LINK_TOPIC_SZ 160

/* Failed first attempts before giving up: the SDK's 10 rapid disconnects + 1. */
#define LINK_INITIAL_ATTEMPTS 11

/* Creates the client and starts connecting, with the SDK's reconnect
 * policy `pol` (which must outlive the client) and the SDK's timeouts
 * (open and join 10 s), scaled by SMOKE_TIME_SCALE. Errors as
 * phx_client_new. */
err_code link_open(const settings *s, inbox *q, policy *pol, phx_client **out, char *err);

/* Services the client until the first connection is open. ERR_NETWORK
 * after LINK_INITIAL_ATTEMPTS failed attempts, ERR_CLOSED when phoenix
 * gave up, ERR_WRONG_STATE when *stop became non-zero (a signal). */
err_code link_await_open(phx_client *phx, const volatile sig_atomic_t *stop, char *err);

/* Joins `topic`, logging the SDK's lines; `own` adds the "Subscribed to"
 * confirmation of agent_control and agent_rooms. Errors as phx_join. */
err_code link_join(phx_client *phx, const char *topic, int own, char *err);

/* Writes "prefix:id" into topic. */
void link_topic(char topic[LINK_TOPIC_SZ], const char *prefix, const char *id);

#endif
