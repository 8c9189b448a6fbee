/* phx_url: where a Phoenix socket connects, from BAND_WS_URL and a key.
 *
 * band-protocol.md section 5.1: the connect URL is the configured one with
 * its query rebuilt as the existing parameters minus any api_key or vsn
 * (kept verbatim, in order), then api_key=<key>, then vsn=2.0.0, then for
 * agents &agent_id=<id>. The key and id are percent-encoded (everything
 * but A-Z a-z 0-9 - . _ ~), which leaves a UUID unchanged. A fragment is
 * dropped. Which URLs are usable is config_url_usable's call (the guard's
 * own judge), so preflight and this client never disagree. Pure: no I/O,
 * no globals.
 *
 * The resulting path holds the API key: it is a secret like the key
 * itself, never printed unredacted (redact masks `api_key=`).
 */
#ifndef SMOKE_PHX_URL_H
#define SMOKE_PHX_URL_H

#include "err.h"

typedef struct phx_endpoint {
    int tls;        /* 1 for wss:// */
    char host[256]; /* to connect to, for SNI and the certificate check;
                       IPv6 without brackets */
    int port;       /* explicit, or 443 / 80 */
    char *path;     /* malloc'd "/path?query"; secret (holds the key) */
} phx_endpoint;

/* Parses ws_url (ws:// or wss://, any case) and builds the endpoint.
 * agent_id may be NULL or "" (a user connection). On failure *out holds
 * nothing to clear. ERR_CONFIG when ws_url is not a ws/wss URL with a host
 * (the message does not quote it), ERR_USAGE for a NULL/empty ws_url or
 * api_key, ERR_NOMEM. */
err_code phx_url_build(const char *ws_url, const char *api_key, const char *agent_id,
                       phx_endpoint *out, char *err);

/* Wipes the path (it holds the key) and frees it. NULL-safe. */
void phx_endpoint_clear(phx_endpoint *ep);

#endif
