/* settings: what the stand-in is told by its environment.
 *
 * The four BAND_* variables are agent.py's (band-protocol.md 1.2): all
 * required, an empty value counts as missing, and there is no fallback to
 * the SDK's production defaults; a production URL is refused outright.
 * The FAKE_AGENT_* knobs exist for tests only (main.c lists them).
 *
 * The strings point into the process environment, which outlives every
 * user of a settings struct; nothing is allocated.
 */
#ifndef FAKE_AGENT_SETTINGS_H
#define FAKE_AGENT_SETTINGS_H

#include "err.h"

typedef struct settings {
    const char *agent_id; /* BAND_AGENT_ID */
    const char *api_key;  /* BAND_API_KEY: secret */
    const char *rest_url; /* BAND_REST_URL */
    const char *ws_url;   /* BAND_WS_URL */
    int keepalive_s;      /* FAKE_AGENT_KEEPALIVE_S, default 20 (websockets' ping)
                             x SMOKE_TIME_SCALE, rounded up to whole seconds */
    int heartbeat_ms;     /* FAKE_AGENT_HEARTBEAT_MS, default 30000 (Phoenix)
                             x SMOKE_TIME_SCALE */
    int no_reconnect;     /* FAKE_AGENT_NO_RECONNECT=1: stop after the first loss */
    int trace;            /* FAKE_AGENT_TRACE=1: phoenix's own trace on stderr too */
} settings;

/* Reads the environment into *out. ERR_CONFIG with agent.py's own text
 * ("BAND_AGENT_ID environment variable is required") for a missing
 * variable, checked in agent.py's order, or with the name of a knob that
 * is not a number in range; ERR_PRODUCTION when a URL is production Band. */
err_code settings_from_env(settings *out, char *err);

#endif
