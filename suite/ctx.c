/* realpath() is XSI in glibc headers. */
#define _XOPEN_SOURCE 700

#include "ctx.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "redact.h"

#define CTX_LOCK_WAIT_MS 10000
#define CTX_SHARE_NAME "band-sandbox-staging-smoke" /* PREFIX/share/<this> */

/* The launcher is this same executable; find it the portable way: argv[0]
 * resolved against the working directory, or looked up on PATH. */
static void keep_if_fits(const char *path, char *out, size_t cap)
{
    size_t len = strlen(path);
    if (len < cap)
        memcpy(out, path, len + 1);
}

static void find_self(const char *argv0, char *out, size_t cap)
{
    char resolved[PATH_MAX];
    out[0] = '\0';
    if (strchr(argv0, '/')) {
        if (realpath(argv0, resolved))
            keep_if_fits(resolved, out, cap);
        return;
    }
    const char *path = getenv("PATH");
    if (!path)
        return;
    char *copy = strdup(path), *save = NULL;
    for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir;
         dir = strtok_r(NULL, ":", &save)) {
        char candidate[PATH_MAX];
        snprintf(candidate, sizeof candidate, "%s/%s", dir, argv0);
        if (access(candidate, X_OK) == 0 && realpath(candidate, resolved)) {
            keep_if_fits(resolved, out, cap);
            break;
        }
    }
    free(copy);
}

/* Where the project's files are: the checkout this band-smoke was built
 * from, unless it runs installed (PREFIX/bin/band-smoke beside
 * PREFIX/share/CTX_SHARE_NAME, which `cmake --install` fills with the
 * agent payload and the skill): then that share folder, so an installed
 * copy works without the checkout. */
static void find_project_root(const char *self_exe, char *out, size_t cap)
{
    snprintf(out, cap, "%s", SMOKE_SOURCE_DIR);
    const char *slash = strrchr(self_exe, '/');
    if (!slash)
        return;
    char share[PATH_MAX], payload[PATH_MAX + 64], resolved[PATH_MAX];
    snprintf(share, sizeof share, "%.*s/../share/%s", (int)(slash - self_exe), self_exe,
             CTX_SHARE_NAME);
    snprintf(payload, sizeof payload, "%s/fixtures/sandbox-agent/agent.py", share);
    if (access(payload, R_OK) == 0 && realpath(share, resolved))
        keep_if_fits(resolved, out, cap);
}

err_code ctx_init(smoke_ctx *ctx, const char *argv0, char *err)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->lock_fd = -1;
    ctx->out = stdout;
    ctx->clock = clock_system();
    find_self(argv0, ctx->self_exe, sizeof ctx->self_exe);

    char root[CONFIG_PATH_SZ];
    find_project_root(ctx->self_exe, root, sizeof root);
    err_code rc = config_load(&ctx->cfg, root, err);
    if (rc != ERR_OK)
        return rc;
    rc = agentlog_patterns_from_env(&ctx->patterns, err);
    if (rc != ERR_OK)
        return rc;
    rc = state_store_init(&ctx->store, ctx->cfg.state_dir, &ctx->clock, err);
    if (rc != ERR_OK)
        return rc;
    snprintf(ctx->agent_log, sizeof ctx->agent_log, "%s/agent.log", ctx->store.dir);
    return ERR_OK;
}

err_code ctx_lock(smoke_ctx *ctx, char *err)
{
    if (ctx->lock_fd >= 0)
        return ERR_OK;
    return state_lock(&ctx->store, CTX_LOCK_WAIT_MS, &ctx->lock_fd, err);
}

err_code ctx_load(smoke_ctx *ctx, char *err)
{
    state_free(ctx->st);
    ctx->st = NULL;
    return state_load(&ctx->store, &ctx->st, err);
}

err_code ctx_save(smoke_ctx *ctx, char *err)
{
    if (!ctx->st)
        return err_set(err, ERR_WRONG_STATE, "no run state to save");
    return state_save(&ctx->store, ctx->st, err);
}

err_code ctx_save_cb(void *ud, char *err)
{
    return ctx_save(ud, err);
}

err_code ctx_sbx(const smoke_ctx *ctx, sbx_ctx *sbx, char *err)
{
    err_code rc = sbx_init(sbx, ctx->cfg.sbx_bin, ctx->cfg.sbx_timeout_s * 1000, 0, err);
    sbx->progress = ctx->out; /* every sbx wait over 2 s shows itself */
    return rc;
}

/* Drops the oldest line of the tee. */
static void tee_drop_first(ctx_tee *tee)
{
    char *nl = memchr(tee->text, '\n', tee->len);
    size_t cut = nl ? (size_t)(nl - tee->text) + 1 : tee->len;
    memmove(tee->text, tee->text + cut, tee->len - cut + 1);
    tee->len -= cut;
    tee->lines--;
}

/* Appends one message (it may hold several lines), redacted, then drops
 * the oldest lines until the bounds hold. A message longer than a quarter
 * of the tee is cut, so one never pushes all the others out. */
static void tee_keep(ctx_tee *tee, const char *msg)
{
    char clean[STATE_OUTPUT_SZ / 4];
    redact_into(msg, clean, sizeof clean);
    for (const char *line = clean; *line;) {
        size_t n = strcspn(line, "\n");
        while (tee->lines > 0 &&
               (tee->lines >= CTX_TEE_LINES || tee->len + n + 2 > sizeof tee->text))
            tee_drop_first(tee);
        memcpy(tee->text + tee->len, line, n);
        tee->len += n;
        tee->text[tee->len++] = '\n';
        tee->text[tee->len] = '\0';
        tee->lines++;
        line += n + (line[n] == '\n');
    }
}

void ctx_say(const smoke_ctx *ctx, const char *fmt, ...)
{
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    redact_fprintf(ctx->out, "%s\n", msg);
    fflush(ctx->out);
    if (ctx->tee)
        tee_keep(ctx->tee, msg);
}

void ctx_say_lines(const smoke_ctx *ctx, const char *text)
{
    for (const char *line = text; line && *line;) {
        size_t n = strcspn(line, "\n");
        ctx_say(ctx, "%.*s", (int)n, line);
        line += n + (line[n] == '\n');
    }
}

void ctx_tee_start(smoke_ctx *ctx, ctx_tee *tee)
{
    memset(tee, 0, sizeof *tee);
    ctx->tee = tee;
}

void ctx_tee_stop(smoke_ctx *ctx)
{
    ctx->tee = NULL;
}

int64_t ctx_now(const smoke_ctx *ctx)
{
    return clock_wall_ms(&ctx->clock);
}

void ctx_close(smoke_ctx *ctx)
{
    state_free(ctx->st);
    ctx->st = NULL;
    if (ctx->lock_fd >= 0)
        state_unlock(ctx->lock_fd);
    ctx->lock_fd = -1;
}
