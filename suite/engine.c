#include "engine.h"

#include <string.h>

#include "diag.h"
#include "gates.h"
#include "redact.h"
#include "report.h"
#include "runner.h"

err_code engine_render(smoke_ctx *ctx, char *err)
{
    if (!ctx->st)
        return ERR_OK;
    report_phase phases[PH__COUNT];
    for (int i = 0; i < PH__COUNT; i++) {
        const phase_def *d = phase_get((phase_id)i);
        phases[i] = (report_phase){d->name, d->ctest_name, d->title, d->probe_label};
    }
    report_input in = {ctx->st, phases, PH__COUNT, SMOKE_VERSION, ctx_now(ctx)};
    return report_write(&in, ctx->store.dir, err);
}

/* Saves and renders; a failure here fails the step, since an unsaved result
 * would be lost and an unrendered report would lie about the run. */
static int persist(smoke_ctx *ctx)
{
    char err[ERR_BUFSZ];
    err_code rc = ctx_save(ctx, err);
    if (rc == ERR_OK)
        rc = engine_render(ctx, err);
    if (rc != ERR_OK) {
        ctx_say(ctx, "ERROR: %s: %s", err_str(rc), err);
        return 0;
    }
    return 1;
}

static int already_passed(smoke_ctx *ctx, const phase_def *def)
{
    if (!ctx->st)
        return 0;
    /* A finished or stale run is never continued, so its passed start does
     * not count: start will archive it and begin a new run. */
    if (def->id == PH_START &&
        (state_is_terminal(ctx->st) || state_is_stale(ctx->st, ctx_now(ctx))))
        return 0;
    const state_phase_result *r = state_phase(ctx->st, def->name);
    if (!r || r->status != RESULT_PASSED)
        return 0;
    char when[CLOCK_ISO_SZ];
    ctx_say(ctx, "%s already passed at %s; not re-run (--again forces it)", def->ctest_name,
        clock_format_iso(r->at_ms, when));
    return 1;
}

static int skip(smoke_ctx *ctx, const phase_def *def, const gate_verdict *gate)
{
    ctx_say(ctx, "SKIPPED: %s", gate->reason);
    if (ctx->st) {
        state_set_phase(ctx->st, def->name, RESULT_SKIPPED, ctx_now(ctx), 0, gate->reason);
        if (!persist(ctx))
            return ENGINE_EXIT_FAILED;
    }
    return ENGINE_EXIT_SKIPPED;
}

static void tell_next(smoke_ctx *ctx);

/* A phase that failed once the sandbox exists keeps its diagnostics
 * (diag.h); a failure to keep them is said, and fails nothing more. */
static void keep_diagnostics(smoke_ctx *ctx, const phase_def *def, const char *why)
{
    const state_t *st = ctx->st;
    sbx_ctx sbx;
    char err[ERR_BUFSZ], name[DIAG_NAME_SZ];
    int have_sbx = ctx_sbx(ctx, &sbx, err) == ERR_OK;
    sbx.progress = NULL;
    diag_spec spec = {ctx->store.dir, def->name, why, ctx->agent_log,
                      st->agent_process.log_offset, have_sbx ? &sbx : NULL, st->sandbox_name,
                      ctx_now(ctx)};
    if (diag_write(&spec, name, err) == ERR_OK) {
        state_set_phase_diagnostics(ctx->st, def->name, name);
        ctx_say(ctx, "diagnostics kept in %s/%s", ctx->store.dir, name);
    } else
        ctx_say(ctx, "diagnostics could not be kept: %s", err);
}

/* The evidence already proves the failure: record it as the phase's result
 * and, for a probe phase, as that probe's latest attempt, so the verdict
 * says FAIL and why. No retry can change it (the requirement is about the
 * process that was interrupted), so the run is marked failed: cleanup,
 * report and teardown then go ahead instead of waiting at the checkpoint. */
static int fail_by_evidence(smoke_ctx *ctx, const phase_def *def, const gate_verdict *gate)
{
    int64_t now = ctx_now(ctx);
    ctx_say(ctx, "FAILED %s: %s", def->ctest_name, gate->reason);
    if (def->probe_label) {
        state_probe p = {.passed = 0, .at_ms = now, .latency_ms = -1,
                         .generation = ctx->st->agent_process.generation};
        snprintf(p.label, sizeof p.label, "%s", def->probe_label);
        redact_into(gate->reason, p.detail, sizeof p.detail);
        state_add_probe(ctx->st, &p);
    }
    state_set_phase(ctx->st, def->name, RESULT_FAILED, now, 0, gate->reason);
    ctx->st->phase = RUN_FAILED;
    if (!persist(ctx))
        return ENGINE_EXIT_FAILED;
    tell_next(ctx);
    return ENGINE_EXIT_FAILED;
}

static void tell_next(smoke_ctx *ctx)
{
    char why[1024], cmd[512];
    engine_next(ctx, why, sizeof why, cmd, sizeof cmd);
    ctx_say(ctx, "next: %s", why);
    if (cmd[0])
        ctx_say(ctx, "  %s", cmd);
}

static int record(smoke_ctx *ctx, const phase_def *def, const phase_env *env,
                  const runner_result *res, int64_t started_at, const ctx_tee *tee)
{
    char took[CLOCK_DUR_SZ];
    clock_format_duration(res->duration_ms, took);
    if (!ctx->st) { /* only a phase that needs no run gets here without one */
        ctx_say(ctx, "%s %s in %s%s%s", res->passed ? "PASSED" : "FAILED", def->ctest_name, took,
            res->passed && env->note[0] ? ": " : "", res->passed ? env->note : res->message);
        return res->passed ? ENGINE_EXIT_PASSED : ENGINE_EXIT_FAILED;
    }
    state_set_phase(ctx->st, def->name, res->passed ? RESULT_PASSED : RESULT_FAILED,
                    started_at, res->duration_ms, res->passed ? env->note : res->message);
    state_set_phase_output(ctx->st, def->name, tee->text); /* reports show the phase's lines */
    if (!res->passed && ctx->st->sandbox_name[0])
        keep_diagnostics(ctx, def, res->message);
    if (!persist(ctx))
        return ENGINE_EXIT_FAILED;
    if (res->passed) {
        ctx_say(ctx, "PASSED %s in %s%s%s", def->ctest_name, took, env->note[0] ? ": " : "",
            env->note);
        if (def->on_pass)
            ctx_say(ctx, "%s", def->on_pass);
    } else {
        ctx_say(ctx, "FAILED %s in %s: %s", def->ctest_name, took, res->message);
    }
    tell_next(ctx);
    return res->passed ? ENGINE_EXIT_PASSED : ENGINE_EXIT_FAILED;
}

int engine_run_phase(smoke_ctx *ctx, const phase_def *def, int again)
{
    char err[ERR_BUFSZ];
    err_code rc = ctx_lock(ctx, err);
    if (rc == ERR_OK)
        rc = ctx_load(ctx, err);
    if (rc != ERR_OK && rc != ERR_NOTFOUND) {
        ctx_say(ctx, "ERROR: %s: %s", err_str(rc), err);
        if (rc == ERR_CORRUPT)
            ctx_say(ctx, "The file was left as it is. Inspect or move it away, then run the "
                     "start phase to begin a new run.");
        return ENGINE_EXIT_FAILED;
    }
    if (!again && already_passed(ctx, def))
        return ENGINE_EXIT_PASSED;

    gate_verdict gate;
    gate_check(ctx, def->id, &gate);
    if (gate.fails)
        return fail_by_evidence(ctx, def, &gate);
    if (!gate.open)
        return skip(ctx, def, &gate);

    ctx_tee tee;
    ctx_tee_start(ctx, &tee);
    ctx_say(ctx, "== %s: %s (run %s)", def->ctest_name, def->title,
        ctx->st ? ctx->st->run_id : "none yet");
    phase_env env = {ctx, def, again, ""};
    runner_result res;
    int64_t started_at = ctx_now(ctx);
    rc = runner_run(&env, &res, err);
    ctx_tee_stop(ctx);
    if (rc != ERR_OK) {
        ctx_say(ctx, "ERROR: %s: %s", err_str(rc), err);
        return ENGINE_EXIT_FAILED;
    }
    return record(ctx, def, &env, &res, started_at, &tee);
}

/* The first phase, in order, that has not passed; gated ones say why. */
void engine_next(smoke_ctx *ctx, char *why, size_t why_cap, char *cmd, size_t cmd_cap)
{
    cmd[0] = '\0';
    if (!ctx->st) {
        snprintf(why, why_cap, "no run yet: start one");
        phase_command(phase_get(PH_START), cmd, cmd_cap);
        return;
    }
    if (state_is_terminal(ctx->st) || state_is_stale(ctx->st, ctx_now(ctx))) {
        const state_phase_result *td = state_phase(ctx->st, phase_get(PH_TEARDOWN)->name);
        if (td && td->status == RESULT_PASSED) {
            snprintf(why, why_cap, "run %s is finished (%s); a new run starts with",
                     ctx->st->run_id, state_run_phase_name(ctx->st->phase));
            phase_command(phase_get(PH_START), cmd, cmd_cap);
            return;
        }
    }
    /* The last phase is held whenever any checkpoint holds the run, and
     * its reason carries the operator instruction and the resume command. */
    gate_verdict held;
    if (gate_held(ctx, PH_TEARDOWN, &held)) {
        snprintf(why, why_cap, "%s", held.reason);
        return;
    }
    for (int i = 0; i < PH__COUNT; i++) {
        const phase_def *d = phase_get((phase_id)i);
        const state_phase_result *r = state_phase(ctx->st, d->name);
        if (r && r->status == RESULT_PASSED)
            continue;
        snprintf(why, why_cap, "%s (%s)%s%s", d->ctest_name, d->title,
                 r ? ", last " : "", r ? state_result_name(r->status) : "");
        phase_command(d, cmd, cmd_cap);
        return;
    }
    snprintf(why, why_cap, "every phase of run %s has passed; evidence: %s/evidence.md",
             ctx->st->run_id, ctx->store.dir);
}
