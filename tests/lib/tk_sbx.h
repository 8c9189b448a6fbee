/* tk_sbx: a fake sbx world for one test.
 *
 *   tk_sbx w;
 *   tk_sbx_setup(&w, "balanced");          // state folder, policy init
 *   proc_result r;
 *   int status = tk_sbx_run(&w, &r, "ls", "--json", NULL);
 *   ...
 *   proc_result_free(&r);
 *   tk_sbx_teardown(&w);                   // nothing left running
 *
 * The world is a fresh tk_tmpdir handed to the fake as FAKE_SBX_STATE
 * through the children's environment (never this process's own), the fake
 * `sbx` and `uv` from $SMOKE_FAKE_SBX_BIN (or the build default), and a
 * workspace folder to create sandboxes on. Like the rest of tk, every
 * function aborts on an unexpected system failure; a fake command that
 * fails is not one (its status is returned).
 */
#ifndef SMOKE_TK_SBX_H
#define SMOKE_TK_SBX_H

#include "proc.h"
#include "sbx.h"

#define TK_SBX_ENV_MAX 16
#define TK_SBX_TIMEOUT_MS 20000 /* bound of one fake command */

typedef struct tk_sbx {
    char *state;     /* FAKE_SBX_STATE, removed by teardown */
    char *bin_dir;   /* where the fake sbx and uv are */
    char *sbx;       /* the fake sbx executable */
    char *workspace; /* an existing folder for `create` */
    /* "NAME=value" entries every fake command gets (FAKE_SBX_STATE first),
     * NULL-terminated; give it to proc_env.add / sbx_ctx.env.add. */
    const char *env[TK_SBX_ENV_MAX + 1];
    char *owned[TK_SBX_ENV_MAX];
    size_t nenv;
} tk_sbx;

/* Makes the world; runs `sbx policy init POLICY` unless policy is NULL. */
void tk_sbx_setup(tk_sbx *w, const char *policy);

/* Adds "NAME=value" (copied) to the environment of every later command. */
void tk_sbx_setenv(tk_sbx *w, const char *entry);

/* Runs the fake sbx with args (NULL-terminated) and extra_env entries
 * (NULL-terminated, may be NULL) on top of w->env, at most timeout_ms
 * (0 = TK_SBX_TIMEOUT_MS). *res is always filled (proc_result_free it).
 * Returns the exit status; 128 + signal when killed; -1 on a timeout. */
int tk_sbx_runv(tk_sbx *w, const char *const *extra_env, const char *const *args,
                int timeout_ms, proc_result *res);

/* tk_sbx_runv with the args as a NULL-terminated list and no extras. */
int tk_sbx_run(tk_sbx *w, proc_result *res, const char *arg, ...)
    __attribute__((sentinel));

/* An sbx context on the fake: its path, w->env, the given timeout. */
void tk_sbx_ctx(tk_sbx *w, sbx_ctx *ctx, int timeout_ms);

/* Stops the daemon and every exec session (`sbx daemon stop`), kills
 * whatever `sbx _ps` still reports, removes the state folder, frees w.
 * Returns how many processes it had to kill after the stop: a test asserts
 * 0, since the fake's own stop must leave nothing running. */
int tk_sbx_teardown(tk_sbx *w);

#endif
