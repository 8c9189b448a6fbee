#include "commands.h"

#include <stdarg.h>
#include <string.h>

#include "engine.h"
#include "lifecycle.h"
#include "phases.h"
#include "redact.h"

static int fail(smoke_ctx *ctx, err_code rc, const char *err)
{
    redact_fprintf(ctx->out, "ERROR: %s: %s\n", err_str(rc), err);
    return 1;
}

static int usage(smoke_ctx *ctx, const char *text)
{
    redact_fprintf(ctx->out, "usage: band-smoke %s\n", text);
    return 2;
}

/* Loads for a writing command: locked, and a run must exist. */
static int open_run(smoke_ctx *ctx)
{
    char err[ERR_BUFSZ];
    err_code rc = ctx_lock(ctx, err);
    if (rc == ERR_OK)
        rc = ctx_load(ctx, err);
    if (rc == ERR_NOTFOUND) {
        redact_fprintf(ctx->out, "ERROR: no run yet (%s); start one with the start phase\n",
                       ctx->store.path);
        return 0;
    }
    if (rc != ERR_OK) {
        fail(ctx, rc, err);
        return 0;
    }
    return 1;
}

static int save_and_render(smoke_ctx *ctx)
{
    char err[ERR_BUFSZ];
    err_code rc = ctx_save(ctx, err);
    if (rc == ERR_OK)
        rc = engine_render(ctx, err);
    return rc == ERR_OK ? 0 : fail(ctx, rc, err);
}

static void print_phases(smoke_ctx *ctx)
{
    char when[CLOCK_ISO_SZ];
    for (int i = 0; i < PH__COUNT; i++) {
        const phase_def *d = phase_get((phase_id)i);
        const state_phase_result *r = state_phase(ctx->st, d->name);
        redact_fprintf(ctx->out, "  %-32s %-8s %s\n", d->ctest_name,
                       r ? state_result_name(r->status) : "-",
                       r ? clock_format_iso(r->at_ms, when) : "");
    }
}

static void print_probes(smoke_ctx *ctx)
{
    for (int i = 0; i < STATE_MANDATORY_PROBES; i++) {
        const char *label = state_mandatory_probes[i];
        const state_probe *p = state_latest_probe(ctx->st, label);
        if (!p) {
            redact_fprintf(ctx->out, "  %-22s not yet proven\n", label);
            continue;
        }
        redact_fprintf(ctx->out, "  %-22s %s (marker %s, %lld ms, %d attempt%s)%s%s\n", label,
                       p->passed ? "PROVEN" : "FAILED", p->marker, (long long)p->latency_ms,
                       state_probe_attempts(ctx->st, label),
                       state_probe_attempts(ctx->st, label) == 1 ? "" : "s",
                       p->passed ? "" : ": ", p->passed ? "" : p->detail);
    }
}

/* The lifecycle's next step (docs/lifecycle.md), as every phase prints it. */
static void print_next(smoke_ctx *ctx)
{
    char why[1024], cmd[512];
    engine_next(ctx, why, sizeof why, cmd, sizeof cmd);
    redact_fprintf(ctx->out, "next: %s\n", why);
    if (cmd[0])
        redact_fprintf(ctx->out, "  %s\n", cmd);
}

int cmd_status(smoke_ctx *ctx)
{
    char err[ERR_BUFSZ];
    err_code rc = ctx_load(ctx, err);
    if (rc != ERR_OK && rc != ERR_NOTFOUND)
        return fail(ctx, rc, err);
    if (ctx->st) {
        char started[CLOCK_ISO_SZ], updated[CLOCK_ISO_SZ];
        redact_fprintf(ctx->out, "run %s: %s, lifecycle %s (started %s, updated %s)\n"
                       "state: %s\n", ctx->st->run_id, state_run_phase_name(ctx->st->phase),
                       life_name(life_of(ctx->st, ctx_now(ctx), NULL)),
                       clock_format_iso(ctx->st->started_at_ms, started),
                       clock_format_iso(ctx->st->updated_at_ms, updated), ctx->store.path);
        redact_fprintf(ctx->out, "verdict so far: %s\nproven:\n",
                       state_verdict_name(state_verdict_of(ctx->st)));
        print_probes(ctx);
        redact_fprintf(ctx->out, "phases:\n");
        print_phases(ctx);
    } else {
        redact_fprintf(ctx->out, "no run yet (state folder %s)\n", ctx->store.dir);
    }
    print_next(ctx);
    return 0;
}

int cmd_record_phase(smoke_ctx *ctx, int argc, char **argv)
{
    run_phase phase;
    if (argc != 1 || state_run_phase_parse(argv[0], &phase) != ERR_OK)
        return usage(ctx, "record-phase started|awaiting-wifi-recovery|awaiting-sleep-wake|"
                          "daemon-restart|completed|failed");
    char err[ERR_BUFSZ], why[512];
    if (ctx_lock(ctx, err) != ERR_OK)
        return fail(ctx, ERR_TIMEOUT, err);
    err_code rc = ctx_load(ctx, err);
    if (rc != ERR_OK && rc != ERR_NOTFOUND)
        return fail(ctx, rc, err);
    /* A finished run's results are never rewritten (docs/lifecycle.md). */
    if (!life_allows_record(ctx->st, ctx_now(ctx), phase, why, sizeof why)) {
        redact_fprintf(ctx->out, "ERROR: %s\n", why);
        return 1;
    }
    if (ctx->st && ctx->st->phase == phase) {
        redact_fprintf(ctx->out, "run %s: already %s; nothing changed\n", ctx->st->run_id,
                       state_run_phase_name(phase));
        return 0;
    }
    if (phase == RUN_STARTED) {
        /* The same entry as the start phase: a new run only when there is
         * none or the last one is finished or stale. */
        int rotated = 0;
        state_free(ctx->st); /* state_open_run loads (and may rotate) it afresh */
        ctx->st = NULL;
        rc = state_open_run(&ctx->store, &ctx->st, &rotated, err);
        if (rc != ERR_OK)
            return fail(ctx, rc, err);
    }
    ctx->st->phase = phase;
    if (save_and_render(ctx) != 0)
        return 1;
    redact_fprintf(ctx->out, "run %s: phase %s\n", ctx->st->run_id, state_run_phase_name(phase));
    print_next(ctx);
    return 0;
}

static void join_words(int argc, char **argv, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < argc && n + 1 < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? " " : "", argv[i]);
}

int cmd_record_observation(smoke_ctx *ctx, int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[0], "sleep_wake") && strcmp(argv[0], "daemon_restart")))
        return usage(ctx, "record-observation sleep_wake|daemon_restart TEXT...");
    if (!open_run(ctx))
        return 1;
    char text[STATE_TEXT_SZ], why[512];
    if (!life_allows_record(ctx->st, ctx_now(ctx), RUN__COUNT, why, sizeof why)) {
        redact_fprintf(ctx->out, "ERROR: %s\n", why);
        return 1;
    }
    join_words(argc - 1, argv + 1, text, sizeof text);
    if (state_set_residual(ctx->st, argv[0], text) != ERR_OK)
        return usage(ctx, "record-observation sleep_wake|daemon_restart TEXT...");
    if (save_and_render(ctx) != 0)
        return 1;
    redact_fprintf(ctx->out, "run %s: observation %s recorded\n", ctx->st->run_id, argv[0]);
    return 0;
}

int cmd_confirm(smoke_ctx *ctx, int argc, char **argv)
{
    if (argc != 1 || strcmp(argv[0], "sleep-wake") != 0)
        return usage(ctx, "confirm sleep-wake");
    if (!open_run(ctx))
        return 1;
    if (ctx->st->phase != RUN_AWAITING_SLEEP) {
        redact_fprintf(ctx->out, "ERROR: run %s is not waiting at the sleep checkpoint "
                                 "(phase %s); nothing to confirm\n",
                       ctx->st->run_id, state_run_phase_name(ctx->st->phase));
        return 1;
    }
    ctx->st->evidence.sleep.confirmed_at_ms = ctx_now(ctx);
    if (save_and_render(ctx) != 0)
        return 1;
    char cmd[512];
    phase_command(phase_get(PH_AFTER_SLEEP), cmd, sizeof cmd);
    redact_fprintf(ctx->out, "run %s: operator confirmed the host sleep/wake\nnext: %s\n",
                   ctx->st->run_id, cmd);
    return 0;
}

int cmd_report(smoke_ctx *ctx)
{
    char err[ERR_BUFSZ];
    err_code rc = ctx_load(ctx, err);
    if (rc == ERR_NOTFOUND) {
        redact_fprintf(ctx->out, "no run yet: nothing to report (%s)\n", ctx->store.path);
        return 0;
    }
    if (rc != ERR_OK)
        return fail(ctx, rc, err);
    /* A finished run's reports stand as they were written. */
    int finished = life_of(ctx->st, ctx_now(ctx), NULL) == LIFE_FINISHED;
    rc = finished ? ERR_OK : engine_render(ctx, err);
    if (rc != ERR_OK)
        return fail(ctx, rc, err);
    if (finished)
        redact_fprintf(ctx->out, "run %s is finished; its reports stand as written\n",
                       ctx->st->run_id);
    redact_fprintf(ctx->out, "run %s: %s\n  %s/evidence.md\n  %s/junit.xml\n", ctx->st->run_id,
                   state_verdict_name(state_verdict_of(ctx->st)), ctx->store.dir,
                   ctx->store.dir);
    return 0;
}

/* `status --brief`: three lines for the end of a ctest run (ctestview.h):
 * the run and its verdict so far, which probes are proven, the next command. */
int cmd_status_brief(smoke_ctx *ctx)
{
    char err[ERR_BUFSZ], cmd[512];
    err_code rc = ctx_load(ctx, err);
    if (rc != ERR_OK && rc != ERR_NOTFOUND) {
        fail(ctx, rc, err);
        phase_command(phase_get(PH_START), cmd, sizeof cmd);
        redact_fprintf(ctx->out, "next: the file was left as it is; inspect it or move it "
                                 "away, then start a new run with:\n  %s\n", cmd);
        return 1;
    }
    if (ctx->st) {
        char proven[256] = "";
        size_t n = 0;
        for (int i = 0; i < STATE_MANDATORY_PROBES && n < sizeof proven; i++) {
            const state_probe *p = state_latest_probe(ctx->st, state_mandatory_probes[i]);
            if (p && p->passed)
                n += (size_t)snprintf(proven + n, sizeof proven - n, "%s%s", n ? ", " : "",
                                      state_mandatory_probes[i]);
        }
        redact_fprintf(ctx->out, "run %s: %s; verdict so far %s; proven: %s\n", ctx->st->run_id,
                       state_run_phase_name(ctx->st->phase),
                       state_verdict_name(state_verdict_of(ctx->st)),
                       proven[0] ? proven : "nothing yet");
    } else {
        redact_fprintf(ctx->out, "no run yet (state folder %s)\n", ctx->store.dir);
    }
    print_next(ctx);
    return 0;
}
