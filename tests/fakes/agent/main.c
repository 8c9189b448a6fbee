/* fake-agent: the C stand-in for fixtures/sandbox-agent/agent.py + band-sdk.
 *
 * The real payload is a Python band-sdk agent, which cannot run offline.
 * This program does on the wire what that agent does (band-protocol.md
 * sections 4 to 6 and 8: identity, joins, marks, the reply with its
 * mention, reconnect and rejoin with the SDK's backoff) and writes the
 * SDK's log lines in its format, so the rehearsal exercises every part of
 * band-smoke that reads them. The fake sbx's `uv run agent.py` execs it.
 *
 *   fake-agent                  run until a signal or a final close
 *   fake-agent --sdk-version    print "band-sdk 0.0.0+standin" and exit 0
 * Any other arguments are ignored, as agent.py ignores them.
 *
 * Environment, as agent.py (all required, no production fallback):
 *   BAND_AGENT_ID, BAND_API_KEY, BAND_REST_URL, BAND_WS_URL
 * Proxy: HTTPS_PROXY / https_proxy / HTTP_PROXY / http_proxy and NO_PROXY,
 * read by support/netenv for both the REST and the WebSocket leg.
 * Connection policy: the SDK's (band-protocol.md 5.1, 5.2, 8; policy.h):
 * WS keepalive ping 20 s / 20 s, Phoenix heartbeat 30 s, open and join
 * timeouts 10 s, reconnect delays with equal jitter, rapid-disconnect
 * minimums 2 s / 10 s and the hold-down. Every one of those durations is
 * multiplied by SMOKE_TIME_SCALE (support/tscale.h; the rehearsal's one
 * time knob; unset = real time).
 * Test knobs (defaults are the SDK's, scaled):
 *   FAKE_AGENT_KEEPALIVE_S   WebSocket ping after this many idle seconds,
 *                            drop after twice that without a pong (20; 0 = off)
 *   FAKE_AGENT_HEARTBEAT_MS  Phoenix heartbeat interval (30000)
 *   FAKE_AGENT_NO_RECONNECT  1 = after the first lost connection stay up
 *                            but never reconnect (the negative rehearsal)
 *   FAKE_AGENT_TRACE         1 = also phoenix's own transport trace
 *                            (loggers "phx" and "lws") on stderr
 *
 * Output: the SDK's log lines on stderr (sdklog.h; agent.h lists them),
 * UTC, the key never in them. Exit status: 0 after SIGTERM/SIGINT or when
 * Band closes the socket with 1000/1001; 1 when a variable is missing, the
 * agent has no description, or the link ends for good otherwise (1008,
 * no connection after 11 attempts). Configuration errors read as the last
 * line of agent.py's traceback ("ValueError: BAND_AGENT_ID environment
 * variable is required"); other failures as "fake-agent: <why>".
 */
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "sdklog.h"
#include "settings.h"

/* The one global: how the signal handler tells the loop to stop. */
static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* No SA_RESTART: a signal cuts a wait short so the loop sees the flag. */
static int install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    struct sigaction ignore = sa;
    ignore.sa_handler = SIG_IGN;
    /* curl runs without signals: a write to a dead connection must not kill us */
    return sigaction(SIGTERM, &sa, NULL) || sigaction(SIGINT, &sa, NULL) ||
           sigaction(SIGPIPE, &ignore, NULL);
}

static int fail(err_code rc, const char *message)
{
    if (rc == ERR_CONFIG)
        fprintf(stderr, "ValueError: %s\n", message);
    else
        fprintf(stderr, "fake-agent: %s\n", message);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--sdk-version") == 0) {
        printf("band-sdk %s\n", AGENT_SDK_VERSION);
        return 0;
    }
    settings s;
    char err[ERR_BUFSZ];
    err_code rc = settings_from_env(&s, err);
    if (rc != ERR_OK)
        return fail(rc, err);
    if (install_signals() != 0)
        return fail(ERR_USAGE, "cannot install signal handlers");
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return fail(ERR_NOMEM, "curl_global_init failed");
    sdklog_info(SDKLOG_MAIN, "Sandbox smoke agent starting (agent_id=%s)", s.agent_id);
    rc = agent_run(&s, &stop_requested, err);
    curl_global_cleanup();
    return rc == ERR_OK ? 0 : fail(rc, err);
}
