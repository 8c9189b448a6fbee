#include "settings.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "tscale.h"

#define KEEPALIVE_DEFAULT_S 20
#define KEEPALIVE_MAX_S 16000 /* phoenix.h's bound */
#define HEARTBEAT_DEFAULT_MS 30000
#define HEARTBEAT_MAX_MS 3600000

static err_code required(const char *name, const char **out, char *err)
{
    const char *value = getenv(name);
    if (!value || !*value)
        return err_set(err, ERR_CONFIG, "%s environment variable is required", name);
    *out = value;
    return ERR_OK;
}

/* An optional integer knob in [min, max]; unset or empty keeps *out. */
static err_code knob(const char *name, long min, long max, int *out, char *err)
{
    const char *text = getenv(name);
    if (!text || !*text)
        return ERR_OK;
    char *end;
    errno = 0;
    long n = strtol(text, &end, 10);
    if (errno || *end || n < min || n > max)
        return err_set(err, ERR_CONFIG, "%s must be an integer from %ld to %ld", name, min, max);
    *out = (int)n;
    return ERR_OK;
}

/* The stand-in rehearses against fakes and staging; never production. */
static err_code not_production(const char *name, const char *url, char *err)
{
    if (config_url_is_production(url))
        return err_set(err, ERR_PRODUCTION, "%s points at production Band; the stand-in "
                       "talks to staging or a fake only", name);
    return ERR_OK;
}

err_code settings_from_env(settings *out, char *err)
{
    memset(out, 0, sizeof *out);
    /* The SDK's durations at the rehearsal's time scale; lws counts whole
     * seconds, so the keepalive rounds up and never reaches 0 (off). */
    out->keepalive_s = (int)((tscale_ms(KEEPALIVE_DEFAULT_S * 1000) + 999) / 1000);
    out->heartbeat_ms = (int)tscale_ms(HEARTBEAT_DEFAULT_MS);
    err_code rc;
    if ((rc = required("BAND_AGENT_ID", &out->agent_id, err)) ||
        (rc = required("BAND_API_KEY", &out->api_key, err)) ||
        (rc = required("BAND_REST_URL", &out->rest_url, err)) ||
        (rc = required("BAND_WS_URL", &out->ws_url, err)) ||
        (rc = not_production("BAND_REST_URL", out->rest_url, err)) ||
        (rc = not_production("BAND_WS_URL", out->ws_url, err)) ||
        (rc = knob("FAKE_AGENT_KEEPALIVE_S", 0, KEEPALIVE_MAX_S, &out->keepalive_s, err)) ||
        (rc = knob("FAKE_AGENT_HEARTBEAT_MS", 1, HEARTBEAT_MAX_MS, &out->heartbeat_ms, err)) ||
        (rc = knob("FAKE_AGENT_NO_RECONNECT", 0, 1, &out->no_reconnect, err)) ||
        (rc = knob("FAKE_AGENT_TRACE", 0, 1, &out->trace, err)))
        return rc;
    return ERR_OK;
}
