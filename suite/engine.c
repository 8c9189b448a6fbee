#include "engine.h"

#include <string.h>

#include "diag.h"
#include "gates.h"
#include "launch.h"
#include "lifecycle.h"
#include "redact.h"
#include "report.h"
#include "runner.h"
#include "sig.h"

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
    if (!ctx->st || !life_done(ctx->st, ctx_now(ctx), def->id))
        return 0;
    const state_phase_result *r = state_phase(ctx->st, def->name);
    char when[CLOCK_ISO_SZ];
    if (life_of(ctx->st, ctx_now(ctx), NULL) == LIFE_FINISHED)
        ctx_say(ctx, "run %s is finished; %s is not re-run (it %s at %s); a new run starts "
                "with phase.01", ctx->st->run_id, def->ctest_name, state_result_name(r->status),
                clock_format_iso(r->at_ms, when));
    else
        ctx_say(ctx, "%s already passed at %s; not re-run (--again forces it)", def->ctest_name,
                clock_format_iso(r->at_ms, when));
    return 1;
}

/* A skip is written only where it replaces nothing (lifecycle.h): the
 * saved reports keep a phase's failure, and a finished run is read-only. */
static int skip(smoke_ctx *ctx, const phase_def *def, const gate_verdict *gate)
{
    ctx_say(ctx, "SKIPPED: %s", gate->reason);
    if (ctx->st && life_may_record_skip(ctx->st, ctx_now(ctx), def->id)) {
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

int engine_record_interrupted(smoke_ctx *ctx, const phase_def *def, const char *signame,
                              int64_t started_at, int exit_code)
{
    char detail[STATE_TEXT_SZ], cmd[256];
    phase_command(def, cmd, sizeof cmd);
    snprintf(detail, sizeof detail, "interrupted by %.32s before it finished; the run stays "
             "where it was: run it again with: %s", signame, cmd);
    ctx_say(ctx, "INTERRUPTED %s: %s", def->ctest_name, detail);
    if (ctx->st) {
        state_set_phase(ctx->st, def->name, RESULT_SKIPPED, started_at,
                        ctx_now(ctx) - started_at, detail);
        persist(ctx);
        tell_next(ctx);
    }
    return exit_code;
}

/* A launch killed by SIGKILL leaves its key file: the next step, under the
 * run's lock, removes it and says so. */
static void sweep_key_file(smoke_ctx *ctx)
{
    char said[1400];
    if (launch_sweep_key_file(ctx->store.dir, said, sizeof said) != 0)
        ctx_say(ctx, "%s", said);
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
    sweep_key_file(ctx);
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
    if (!res.passed && sig_pending())
        return engine_record_interrupted(ctx, def, sig_name(sig_pending()), started_at,
                                         sig_exit_code());
    return record(ctx, def, &env, &res, started_at, &tee);
}

/* What the lifecycle says comes next (docs/lifecycle.md, "next:"). Every
 * command named here runs in the state the run is in: a phase the
 * lifecycle or a gate would refuse is never named, only what unblocks it. */
void engine_next(smoke_ctx *ctx, char *why, size_t why_cap, char *cmd, size_t cmd_cap)
{
    cmd[0] = '\0';
    state_t *st = ctx->st;
    int64_t now = ctx_now(ctx);
    phase_id failed;
    life_state s = life_of(st, now, &failed);
    const char *verdict = st ? state_verdict_name(state_verdict_of(st)) : "";
    switch (s) {
    case LIFE_NONE:
        snprintf(why, why_cap, "no run yet: start one");
        phase_command(phase_get(PH_START), cmd, cmd_cap);
        return;
    case LIFE_FINISHED:
        snprintf(why, why_cap, "run %s is finished (%s, verdict %s; evidence: %s/evidence.md); "
                 "a new run starts with", st->run_id, state_run_phase_name(st->phase), verdict,
                 ctx->store.dir);
        phase_command(phase_get(PH_START), cmd, cmd_cap);
        return;
    case LIFE_STALE:
        snprintf(why, why_cap, "run %s has been idle for over 12 h and is never continued; a new "
                 "run (which archives it and reaps what it still records) starts with",
                 st->run_id);
        phase_command(phase_get(PH_START), cmd, cmd_cap);
        return;
    case LIFE_ENDED: {
        phase_id next = life_done(st, now, PH_REPORT) ? PH_TEARDOWN : PH_REPORT;
        snprintf(why, why_cap, "run %s has ended (%s, verdict %s); %s finishes it",
                 st->run_id, state_run_phase_name(st->phase), verdict,
                 phase_get(next)->ctest_name);
        phase_command(phase_get(next), cmd, cmd_cap);
        return;
    }
    case LIFE_CLOSING:
    case LIFE_FAILING: {
        if (s == LIFE_FAILING)
            snprintf(why, why_cap, "run %s: %s failed, so the run ends (verdict %s): cleanup, "
                     "then report and teardown (or retry %s alone first)", st->run_id,
                     phase_get(failed)->ctest_name, verdict, phase_get(failed)->ctest_name);
        else
            snprintf(why, why_cap, "run %s was marked %s: cleanup, then report and teardown "
                     "end it (verdict %s)", st->run_id, state_run_phase_name(st->phase),
                     verdict);
        phase_command(phase_get(PH_CLEANUP), cmd, cmd_cap);
        return;
    }
    default:
        break;
    }
    /* OPEN or ACTIVE. The last phase is held whenever a checkpoint holds
     * the run, and its reason carries the operator instruction. */
    gate_verdict held;
    if (gate_held(ctx, PH_TEARDOWN, &held)) {
        snprintf(why, why_cap, "%s", held.reason);
        snprintf(cmd, cmd_cap, "%s", held.cmd);
        return;
    }
    /* Otherwise the first phase not passed, or what unblocks it. */
    for (int i = 0; i < PH__COUNT; i++) {
        const phase_def *d = phase_get((phase_id)i);
        if (life_done(st, now, d->id))
            continue;
        gate_verdict gate;
        gate_check(ctx, d->id, &gate);
        if (!gate.open) {
            snprintf(why, why_cap, "%s", gate.reason);
            snprintf(cmd, cmd_cap, "%s", gate.cmd);
            return;
        }
        const state_phase_result *r = state_phase(st, d->name);
        snprintf(why, why_cap, "%s (%s)%s", d->ctest_name, d->title,
                 r && r->status == RESULT_FAILED
                     ? ", last failed: fix what it names, then run it again" : "");
        phase_command(d, cmd, cmd_cap);
        return;
    }
    snprintf(why, why_cap, "every phase of run %s has passed; evidence: %s/evidence.md",
             st->run_id, ctx->store.dir);
}
