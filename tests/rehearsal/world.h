/* world: everything one rehearsal runs against, set up and torn down.
 *
 * A fresh temporary root holding the state folder (SMOKE_STATE_DIR when
 * set), the sandbox workspace, the fake sbx's state and a secrets folder
 * with the dotenv file band-smoke reads (SMOKE_ENV_FILE): loopback
 * endpoints of the fake Band server and a canary BAND_API_KEY_USER. The
 * canary never sits in any environment; band-smoke reads it from that file.
 *
 * The TLS world (default): a throwaway CA and a certificate for 127.0.0.1
 * (tk_tls, made once in root/tls), the fake Band on https and wss with it,
 * band-smoke trusting it through SMOKE_CA_FILE and the sandbox through
 * FAKE_SBX_CA_FILE (the fake sbx hands it to the agent as SSL_CERT_FILE and
 * SMOKE_CA_FILE). opts.plain_http keeps the old http/ws world.
 *
 * Children get a built environment, not this process's: the real staging
 * settings of whoever runs the rehearsal are never read, and the fake sbx
 * is first on PATH and named by SBX_BIN.
 */
#ifndef REHEARSAL_WORLD_H
#define REHEARSAL_WORLD_H

#include "tk_band.h"
#include "tk_tls.h"

#define W_PATH 1024
#define W_MAX_ENV 40

typedef struct world_opts {
    int e2e_timeout_s;       /* E2E_TIMEOUT for probes */
    const char *rest_url;    /* NULL = the fake's; else used as is */
    const char *ws_url;
    const char *extra_env[8]; /* more "K=V" for band-smoke and sbx, NULL-ended */
    int plain_http;          /* 1 = the fake Band on http/ws; default https/wss */
    long heartbeat_timeout_ms; /* the fake Band drops a silent socket; 0 = never */
    const char *time_scale;  /* SMOKE_TIME_SCALE for every child */
    const char *agent_cmd;   /* the sandboxed agent as a shell command; NULL = stand-in */
} world_opts;

typedef struct world {
    char root[W_PATH / 2]; /* short: the other folders live inside it */
    char state_dir[W_PATH];
    char workspace[W_PATH];
    char sbx_state[W_PATH];
    char secrets[W_PATH];
    char env_file[W_PATH + 16];
    char agent_log[W_PATH + 16];
    char canary[64];
    char sandbox[64];
    char band_smoke[W_PATH];
    char sbx_bin[W_PATH + 8];
    char fake_agent[W_PATH + 16];
    int own_state_dir; /* the state folder is ours (not SMOKE_STATE_DIR) */
    int clean;         /* remove everything at the end, evidence included */
    tk_band band;
    tk_tls tls;         /* the TLS world's files (root/tls), unless plain_http */
    int tls_on;
    char *env[W_MAX_ENV];
    int nenv;
} world;

/* Builds the world: temp folders, fake Band started, fake sbx policy
 * initialised. 0 on success, -1 with a message on stderr. */
int world_open(world *w, const world_opts *opts);

/* Stops every process the world started (sbx daemon and sessions, the
 * launcher, the fake Band). Removes the secrets, the workspace and the fake
 * sbx's state always; the state folder (evidence.md, junit.xml) stays and
 * its path is printed, unless w->clean. */
void world_close(world *w);

/* Adds or replaces "K=V" in the children's environment. */
void world_setenv(world *w, const char *name, const char *value);

#endif
