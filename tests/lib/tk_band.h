/* tk_band: run the fake Band server (tests/fakes/band) from a test.
 *
 *   tk_band b;
 *   if (tk_band_start(&b, NULL) != 0) ...        // random user key
 *   ... use b.rest_url, b.ws_url, b.user_key ...
 *   tk_band_control(&b, "{\"action\":\"drop_ws\"}");
 *   tk_band_stop(&b);
 *
 * tk_band_start writes the key into a 0600 file in a fresh tk_tmpdir,
 * starts tk_bin("fake-band") with --user-key-file (never the key itself in
 * argv), --log <dir>/fake-band.log and --keys-out <dir>/minted.keys (every
 * agent key it mints, for canary scans), and waits at most 10 s for its
 * listening line. On Linux the fake dies with the test process
 * (PDEATHSIG), so a crashed test leaves nothing running.
 *
 * Control calls go to the fake's control port, which keeps answering while
 * the api port refuses connections. HTTP helpers use a fresh libcurl
 * handle per call (never a reused connection: a refuse fault must be
 * felt), no proxy, and a 10 s timeout. They return -1 / NULL only when no
 * HTTP answer came at all.
 */
#ifndef SMOKE_TK_BAND_H
#define SMOKE_TK_BAND_H

#include <sys/types.h>

#include "config.h"
#include "tk_tls.h"

#define TK_BAND_KEY_SZ 80

typedef struct tk_band {
    pid_t pid;
    int port;                       /* REST and WebSocket */
    int control_port;               /* /_fake/... only */
    char rest_url[128];             /* http://127.0.0.1:PORT (https:// with TLS) */
    char ws_url[160];               /* ws://127.0.0.1:PORT/api/v1/socket/websocket (wss://) */
    char ca_file[TK_TLS_PATH];      /* with TLS: the CA to trust; "" without */
    char control_url[128];          /* http://127.0.0.1:CONTROL_PORT */
    char user_key[TK_BAND_KEY_SZ];  /* first user: handle smoke-user */
    char user_key2[TK_BAND_KEY_SZ]; /* second user (smoke-user-2), "" unless asked for */
    char dir[1024];                 /* temp folder: key files and fake-band.log */
    char log_path[1100];
} tk_band;

/* Starts the fake with one user (`user_key` NULL = a random key). 0 when
 * it is listening; -1 (with a line on stderr) when it could not start. */
int tk_band_start(tk_band *b, const char *user_key);

/* Everything tk_band_start can be told. */
typedef struct tk_band_opts {
    const char *user_key;       /* NULL = random */
    const tk_tls *tls;          /* NULL = plain http/ws; else https/wss with these files */
    long heartbeat_timeout_ms;  /* fake-band --heartbeat-timeout-ms; 0 = never */
} tk_band_opts;

/* tk_band_start with options. The helpers below trust o->tls->ca. */
int tk_band_start_opts(tk_band *b, const tk_band_opts *o);

/* The same with a second user (keys NULL = random). */
int tk_band_start2(tk_band *b, const char *user_key, const char *user_key2);

/* Settings that point band-smoke's modules at this fake, as config_load
 * would fill them from the environment: its REST and WebSocket URLs, its
 * user key, its CA (TLS world; the clients themselves read SMOKE_CA_FILE
 * from the environment), and a probe deadline of e2e_timeout_s. *cfg is
 * cleared first. */
void tk_band_config(const tk_band *b, int e2e_timeout_s, config *cfg);

/* SIGTERM, wait up to 5 s, then SIGKILL; removes the temp folder. Returns
 * the fake's exit status, or -1 when it had to be killed. Safe to call
 * twice, and after POST /_fake/shutdown. */
int tk_band_stop(tk_band *b);

/* POST /_fake/control with `json`; returns the HTTP status (200 ok, 400 bad). */
int tk_band_control(tk_band *b, const char *json);

/* GET /_fake/stats: live agents and rooms (either pointer may be NULL).
 * 0 on success. */
int tk_band_stats(tk_band *b, int *agents, int *rooms);

/* One number from /_fake/stats ("ws_connections", "rest_calls", ...); -1 if absent. */
long tk_band_stat(tk_band *b, const char *name);

/* GET on the api port with X-API-Key `key` (NULL = none). Returns the
 * malloc'd body ("" when empty) and the status in *status. */
char *tk_band_get(tk_band *b, const char *path_with_query, const char *key, long *status);

/* Any method, with an optional JSON body (NULL = none). */
char *tk_band_request(tk_band *b, const char *method, const char *path_with_query, const char *key,
                      const char *json, long *status);

/* The same against an arbitrary base URL (the control port, ...).
 * *retry_after (may be NULL) gets the Retry-After header's seconds, or -1. */
char *tk_band_http(const char *base_url, const char *method, const char *path_with_query,
                   const char *key, const char *json, long *status, long *retry_after);

#endif
