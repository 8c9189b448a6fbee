/* rehearse: the shared vocabulary of the rehearsal scenarios.
 *
 * A scenario drives band-smoke phase by phase, exactly as an operator or an
 * AI client would (one `band-smoke phase NAME` process per step), replaces
 * each operator action with an injected fault, and checks what the suite
 * concluded. Every check that fails is counted and explained; the
 * rehearsal's exit code is 0 only when every check held.
 */
#ifndef REHEARSAL_REHEARSE_H
#define REHEARSAL_REHEARSE_H

#include <stdint.h>

#include "scan.h"
#include "state.h"
#include "world.h"

typedef struct rehearsal {
    world w;
    scan canary;
    int64_t started_ms;
    int checks;
    int failures;
    int via_ctest;            /* --via ctest: steps are ctest commands (via_ctest.h) */
    char ctest_dir[W_PATH + 8];
    double scale;          /* SMOKE_TIME_SCALE of the children */
    const char *agent_cmd; /* --agent COMMAND, or NULL for the stand-in */
} rehearsal;

typedef struct scenario {
    const char *name;
    const char *what;
    void (*run)(rehearsal *r);
    int e2e_timeout_s; /* probe deadline; 0 = REHEARSAL_E2E_TIMEOUT_S */
    const char *env;   /* one more "K=V" for every child, or NULL */
    int production;    /* point band-smoke at the production URLs */
    int plain_http;    /* the fake Band on http/ws instead of the TLS world */
} scenario;

/* Short deadlines: the fakes answer in milliseconds, and a negative
 * rehearsal that waits for a timeout should not wait two minutes. */
#define REHEARSAL_E2E_TIMEOUT_S 8
/* With --agent: a Python SDK's cold start must fit the readiness wait. */
#define REHEARSAL_AGENT_E2E_TIMEOUT_S 60

/* ---- time: the SDK's and the platform's real durations -------------------
 * (band-protocol.md 5.1, 5.2, 8). Every outage, window and deadline of the
 * rehearsal is derived from these and passed through rehearsal_ms (the
 * rehearsal's SMOKE_TIME_SCALE), never tuned to the stand-in: at scale 1
 * the real SDK agent meets the same numbers. */
#define SDK_KEEPALIVE_MS 20000     /* websockets pings every 20 s */
#define SDK_PONG_TIMEOUT_MS 20000  /* and gives up 20 s without a pong */
#define SDK_CLOSE_TIMEOUT_MS 10000 /* then waits this long for the close handshake */
#define SDK_OPEN_TIMEOUT_MS 10000  /* one connect may hang this long */
#define SDK_HOLD_DOWN_MAX_MS 60000 /* the longest reconnect delay an outage here
                                      can bring: the 3rd rapid disconnect's cooldown */
#define PLATFORM_HEARTBEAT_TIMEOUT_MS 45000 /* the platform drops a silent socket */

/* A stalled link (nothing moves, nothing closes) is noticed by then. */
#define NOTICE_STALL_MS (SDK_KEEPALIVE_MS + SDK_PONG_TIMEOUT_MS + SDK_CLOSE_TIMEOUT_MS)
/* Once the network is back, the agent is connected again by then. */
#define RECOVER_MS (SDK_HOLD_DOWN_MAX_MS + SDK_OPEN_TIMEOUT_MS)
/* The outages: Wi-Fi off long enough for the keepalive to notice; an abrupt
 * cut (every connection dropped); a blip too short for any keepalive; a
 * short host sleep, and a long one the platform's heartbeat timeout
 * notices. */
#define WIFI_STALL_MS (NOTICE_STALL_MS + 5000)
#define ABRUPT_CUT_MS 10000
#define BLIP_MS 5000
#define SHORT_SLEEP_MS 5000
#define LONG_SLEEP_MS (PLATFORM_HEARTBEAT_TIMEOUT_MS + 15000)
/* Process start-up and a loaded machine: real time, never scaled. */
#define SLACK_MS 4000

/* The stand-in's default scale: the main rehearsal stays well under 60 s.
 * A command given with --agent (a real SDK) runs at 1. SMOKE_TIME_SCALE in
 * the rehearsal's own environment overrides both. */
#define REHEARSAL_STANDIN_SCALE "0.1"

/* real_ms at the rehearsal's time scale (the scale its children get). */
int64_t rehearsal_ms(const rehearsal *r, int64_t real_ms);

extern const scenario scenarios[];

/* One step: `band-smoke phase NAME`; shows its output, checks its exit. */
int step_phase(rehearsal *r, const char *phase, int want_exit);

/* Any other band-smoke command (status, confirm, record-phase, ...). */
int step_smoke(rehearsal *r, int want_exit, const char *a, const char *b, const char *c);

/* An injected fault through the fake sbx: `sbx _fault KIND ARG`. */
void inject_sbx(rehearsal *r, const char *why, const char *kind, const char *arg);

/* An injected fault at the fake Band server (a control JSON). */
void inject_band(rehearsal *r, const char *why, const char *json);

/* Waits (bounded) until agent.log shows `pattern` in a line stamped at or
 * after after_ms; returns 1 when seen. */
int wait_log(rehearsal *r, const char *what, const char *pattern, int64_t after_ms,
             int timeout_ms);

/* Records a check; prints it when it fails. Returns ok. */
int check(rehearsal *r, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Sleeps ms milliseconds (nanosleep; usleep is gone from POSIX 2008). */
void sleep_ms(int ms);

/* The run state as it stands now (caller frees), or NULL. */
state_t *load_state(rehearsal *r);

/* A line of the operator's view, stamped with the rehearsal's clock. */
void say(rehearsal *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The standard ending: cleanup, report, teardown; then the fake holds no
 * live agent or room and the reports are valid. */
void finish_run(rehearsal *r, int want_cleanup, int want_teardown);

/* The fake Band holds no live agent or room. */
void check_no_leak(rehearsal *r);

/* Checks evidence.md names the verdict and junit.xml passes the XSD. */
void check_reports(rehearsal *r, const char *verdict);

#endif
