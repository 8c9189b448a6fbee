#include "link.h"

#include <stdio.h>

#include "sdklog.h"
#include "tscale.h"

#define OPEN_TIMEOUT_MS 10000 /* websockets' open_timeout */
#define JOIN_TIMEOUT_MS 10000 /* the Phoenix client's join timeout */

#define SERVICE_SLICE_MS 200

err_code link_open(const settings *s, inbox *q, policy *pol, phx_client **out, char *err)
{
    phx_options o;
    phx_options_init(&o);
    o.ws_url = s->ws_url;
    o.api_key = s->api_key;
    o.agent_id = s->agent_id;
    o.keepalive_s = s->keepalive_s;
    o.heartbeat_ms = s->heartbeat_ms;
    o.open_timeout_ms = (int)tscale_ms(OPEN_TIMEOUT_MS);
    o.join_timeout_ms = (int)tscale_ms(JOIN_TIMEOUT_MS);
    o.retry_delay = policy_retry_delay;
    o.retry_ud = pol;
    o.log = s->trace ? stderr : NULL;
    o.on_push = inbox_on_push;
    o.on_state = inbox_on_state;
    o.ud = q;
    err_code rc = phx_client_new(&o, out, err);
    if (rc == ERR_OK && (rc = phx_connect(*out, err)) != ERR_OK) {
        phx_client_free(*out);
        *out = NULL;
    }
    return rc;
}

err_code link_await_open(phx_client *phx, const volatile sig_atomic_t *stop, char *err)
{
    phx_stats st;
    for (;;) {
        if (*stop)
            return err_set(err, ERR_WRONG_STATE, "stopped by a signal while connecting");
        err_code rc = phx_service(phx, SERVICE_SLICE_MS, err);
        if (rc != ERR_OK)
            return rc;
        phx_stats_get(phx, &st);
        if (st.state == PHX_OPEN)
            return ERR_OK;
        if (st.connect_failures >= LINK_INITIAL_ATTEMPTS)
            return err_set(err, ERR_NETWORK, "no WebSocket connection after %u attempts",
                           st.connect_failures);
    }
}

err_code link_join(phx_client *phx, const char *topic, int own, char *err)
{
    sdklog_info(SDKLOG_STREAMING, "[WebSocket] Subscribing to topic: %s", topic);
    err_code rc = phx_join(phx, topic, 0, err);
    if (rc != ERR_OK)
        return rc;
    sdklog_info(SDKLOG_PHOENIX, "Successfully subscribed to topic %s", topic);
    if (own)
        sdklog_info(SDKLOG_STREAMING, "[WebSocket] Subscribed to topic: %s", topic);
    return ERR_OK;
}

void link_topic(char topic[LINK_TOPIC_SZ], const char *prefix, const char *id)
{
    snprintf(topic, LINK_TOPIC_SZ, "%s:%s", prefix, id);
}
