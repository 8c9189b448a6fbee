/* ctx: what one band-smoke invocation works with.
 *
 * Settings, where the run state lives, the run state itself (loaded and
 * locked for the whole invocation when it writes), the clock, and where
 * operator output goes. main() owns the one smoke_ctx of a process and
 * passes it down; nothing below main keeps a pointer to it after returning.
 */
#ifndef SMOKE_CTX_H
#define SMOKE_CTX_H

#include <stdio.h>

#include "agentlog.h"
#include "clock.h"
#include "config.h"
#include "err.h"
#include "sbx.h"
#include "state.h"

/* The operator lines of the phase being run, kept for its result in the
 * state (phases{}.<name>.output) so the reports, rendered from the state
 * alone, can show them. Redacted, newline-ended; the last CTX_TEE_LINES
 * lines that fit in STATE_OUTPUT_SZ - 1 bytes (a message over a quarter
 * of that is cut). */
#define CTX_TEE_LINES 40
typedef struct ctx_tee {
    char text[STATE_OUTPUT_SZ];
    size_t len;
    int lines;
} ctx_tee;

typedef struct smoke_ctx {
    config cfg;
    state_store store;
    state_t *st;       /* NULL until loaded; NULL when no run exists yet */
    int lock_fd;       /* -1 when not holding the state lock */
    clock_src clock;
    agentlog_patterns patterns;
    char agent_log[STATE_PATH_SZ + 16]; /* <state dir>/agent.log */
    char self_exe[STATE_PATH_SZ];       /* this band-smoke, for the launcher */
    FILE *out;                          /* operator output */
    ctx_tee *tee;                       /* NULL unless a phase's lines are kept */
} smoke_ctx;

/* Reads settings and log patterns, prepares the state folder. Does not load
 * the run state. The project root is the checkout it was built from, or,
 * for a copy `cmake --install` put in PREFIX/bin, PREFIX/share/
 * band-sandbox-staging-smoke. ERR_CONFIG / ERR_IO with a message. */
err_code ctx_init(smoke_ctx *ctx, const char *argv0, char *err);

/* Takes the state lock (waits up to 10 s) for a writing invocation. */
err_code ctx_lock(smoke_ctx *ctx, char *err);

/* Loads state.json into ctx->st. ERR_NOTFOUND leaves ctx->st NULL;
 * ERR_CORRUPT is passed through with the loader's message, untouched. */
err_code ctx_load(smoke_ctx *ctx, char *err);

/* Saves ctx->st atomically. */
err_code ctx_save(smoke_ctx *ctx, char *err);

/* ctx_save for callbacks that persist the run (provision_save_fn): `ud`
 * is the smoke_ctx. */
err_code ctx_save_cb(void *ud, char *err);

/* An sbx context from the settings: SBX_BIN, ordinary calls bounded by
 * SMOKE_SBX_TIMEOUT_S, create and daemon start by sbx.h's longer bound
 * (image pulls, VM boot), and waits over 2 s shown on ctx->out. */
err_code ctx_sbx(const smoke_ctx *ctx, sbx_ctx *sbx, char *err);

/* One operator-facing line on ctx->out, redacted, flushed at once (ctest
 * and AI clients read it as it comes). */
void ctx_say(const smoke_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ctx_say for each line of text (newline-separated; the last may lack
 * its newline). NULL is a no-op. */
void ctx_say_lines(const smoke_ctx *ctx, const char *text);

/* From now on every ctx_say line is also kept in *tee (cleared first),
 * until ctx_tee_stop. The tee is the caller's and must outlive that. */
void ctx_tee_start(smoke_ctx *ctx, ctx_tee *tee);
void ctx_tee_stop(smoke_ctx *ctx);

/* Now, from the context's clock. */
int64_t ctx_now(const smoke_ctx *ctx);

/* Frees the state and releases the lock. */
void ctx_close(smoke_ctx *ctx);

#endif
