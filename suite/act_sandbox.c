/* The phases that act on the sandbox and the agent's process: preflight,
 * sandbox, launch, daemon restart and teardown. The work itself lives in
 * fixtures/ (preflight.h, sandbox.h, launch.h); these say what happened. */
#include "actions.h"

#include <stdlib.h>
#include <string.h>

#include "launch.h"
#include "preflight.h"
#include "probe.h"
#include "redact.h"
#include "sandbox.h"
#include "sbx.h"

/* How long the old agent may take to end once its daemon is gone. */
#define DAEMON_AGENT_END_MS 15000

static const char *home_dir(void)
{
    return getenv("HOME");
}

static int open_sbx(phase_env *env, sbx_ctx *sbx)
{
    char err[ERR_BUFSZ];
    return phase_check(env, ctx_sbx(env->ctx, sbx, err) == ERR_OK, "SBX_BIN: %s", err);
}

/* ---- preflight ------------------------------------------------------------- */

void act_preflight(phase_env *env)
{
    smoke_ctx *ctx = env->ctx;
    sbx_ctx sbx;
    if (!open_sbx(env, &sbx))
        return;
    preflight_input in = {&ctx->cfg, &sbx, home_dir()};
    preflight_result r;
    char err[ERR_BUFSZ];
    err_code rc = preflight_run(&in, &r, err);
    /* Through ctx_say, so the FAIL lines are kept with the phase's result. */
    char *lines = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&lines, &len);
    preflight_print(&r, mem ? mem : ctx->out);
    if (mem && fclose(mem) == 0)
        ctx_say_lines(ctx, lines);
    free(lines);
    if (r.sbx_version[0])
        snprintf(ctx->st->sbx_version, sizeof ctx->st->sbx_version, "%s", r.sbx_version);
    if (!phase_check(env, rc == ERR_OK, "%s", err))
        return;
    phase_note(env, "every check passed; sbx %s", r.sbx_version);
}

/* ---- sandbox --------------------------------------------------------------- */

void act_sandbox(phase_env *env)
{
    smoke_ctx *ctx = env->ctx;
    state_t *st = ctx->st;
    sbx_ctx sbx;
    if (!open_sbx(env, &sbx))
        return;
    sandbox_spec spec = {&ctx->cfg, &sbx, st->run_id, home_dir(), ctx->out};
    sandbox_outcome o;
    char err[ERR_BUFSZ], warm[CLOCK_DUR_SZ];
    err_code rc = sandbox_prepare(&spec, st, &o, err);
    if (!phase_check(env, rc == ERR_OK, "%s", err))
        return;
    clock_format_duration(o.warm_ms, warm);
    phase_note(env, "sandbox %s %s%s (%s); allowed %s; band-sdk %s, warmed in %s; "
                    "workspace %s%s",
               st->sandbox_name, o.created ? "created" : "reused, found ",
               o.created ? "" : o.found_status,
               st->sandbox_created_by[0] ? "made by this suite" : "not made by this suite",
               o.hosts, st->sdk_version, warm, st->workspace,
               o.marked ? "" : " (not marked: teardown leaves it)");
}

/* ---- launch ---------------------------------------------------------------- */

/* The one launch path, for the launch phase and the daemon-restart
 * recovery: stop a live older agent, begin provisioning (which may rotate
 * the run), provision, launch, wait for readiness. */
static int start_agent(phase_env *env, launch_outcome *lo)
{
    smoke_ctx *ctx = env->ctx;
    char err[ERR_BUFSZ];
    if (launch_alive(ctx->st)) {
        phase_say(env, "stopping the agent of launch generation %d first",
                  ctx->st->agent_process.generation);
        err_code rc = launch_stop(ctx->st, ctx->st, err);
        if (!phase_check(env, rc == ERR_OK, "%s", err))
            return 0;
    }
    char old_id[sizeof ctx->st->run_id];
    memcpy(old_id, ctx->st->run_id, sizeof old_id);
    int rotated = 0;
    err_code rc = state_begin_provision(&ctx->store, &ctx->st, &rotated, err);
    if (!phase_check(env, rc == ERR_OK, "cannot begin provisioning: %s", err))
        return 0;
    if (rotated)
        phase_say(env, "run %s already has probes, so this launch begins run %s (run %s is "
                       "archived as %s/state.%s.json)",
                  old_id, ctx->st->run_id, old_id, ctx->store.dir, old_id);
    sbx_ctx sbx;
    if (!open_sbx(env, &sbx))
        return 0;
    phase_say(env, "provisioning a fresh agent and room for run %s (what the run still "
                   "records is reaped first), then launching it in sandbox %s",
              ctx->st->run_id, ctx->st->sandbox_name);
    launch_spec spec = {
        .cfg = &ctx->cfg, .sbx = &sbx, .self_exe = ctx->self_exe, .agent_log = ctx->agent_log,
        .key_dir = ctx->store.dir, .patterns = &ctx->patterns, .save = ctx_save_cb,
        .save_ud = ctx, .clock = &ctx->clock, .out = ctx->out,
    };
    rc = launch_agent(&spec, ctx->st, lo, err);
    return phase_check(env, rc == ERR_OK, "launch failed: %s", err);
}

void act_launch(phase_env *env)
{
    launch_outcome lo;
    if (!start_agent(env, &lo))
        return;
    const state_t *st = env->ctx->st;
    char at[CLOCK_ISO_SZ], took[CLOCK_DUR_SZ];
    clock_format_iso(lo.ready_at_ms, at);
    clock_format_duration(lo.launch_to_ready_ms, took);
    phase_note(env, "agent %s (launch generation %d, launcher pid %d) ready at %s, %s after "
                    "launch; room %s",
               st->agent_name, lo.generation, st->agent_process.pid, at, took, st->room_id);
}

/* ---- daemon restart -------------------------------------------------------- */

/* `sbx daemon stop`, then what became of the agent: it should end with
 * its sbx session. One that survives is a finding, and is stopped here. */
static int stop_daemon(phase_env *env, const sbx_ctx *sbx)
{
    smoke_ctx *ctx = env->ctx;
    state_t *st = ctx->st;
    state_daemon_evidence *ev = &st->evidence.daemon_restart;
    char err[ERR_BUFSZ];
    int was_alive = launch_alive(st);
    phase_say(env, "daemon restart: sbx daemon stop (the agent of launch generation %d %s)",
              st->agent_process.generation, was_alive ? "should end with it" : "is not running");
    ev->stop_at_ms = ctx_now(ctx);
    err_code rc = sbx_daemon_stop(sbx, err);
    if (!phase_check(env, rc == ERR_OK, "%s", err))
        return 0;
    if (was_alive && !launch_wait_gone(st, DAEMON_AGENT_END_MS, ctx->out)) {
        snprintf(ev->agent_exit, sizeof ev->agent_exit, "was still running %d s after sbx "
                 "daemon stop, so band-smoke stopped it", DAEMON_AGENT_END_MS / 1000);
        rc = launch_stop(st, st, err);
        return phase_check(env, rc == ERR_OK, "%s", err);
    }
    state_agent_process *ap = &st->agent_process;
    char detail[LAUNCH_DETAIL_SZ];
    int64_t at;
    if (launch_read_exit(ctx->agent_log, st, detail, sizeof detail, &at, err) == ERR_OK) {
        snprintf(ap->exit_detail, sizeof ap->exit_detail, "%s", detail);
        ap->ended_at_ms = at;
    }
    const char *how = ap->exit_detail[0] ? ap->exit_detail : "ended, no exit note in agent.log";
    snprintf(ev->agent_exit, sizeof ev->agent_exit, "%s",
             was_alive ? how : "was not running before the daemon stop");
    return 1;
}

/* `sbx daemon start -d`, then the sandbox's status as sbx lists it. */
static int start_daemon(phase_env *env, const sbx_ctx *sbx)
{
    smoke_ctx *ctx = env->ctx;
    state_t *st = ctx->st;
    state_daemon_evidence *ev = &st->evidence.daemon_restart;
    char err[ERR_BUFSZ];
    phase_say(env, "daemon restart: sbx daemon start -d");
    ev->start_at_ms = ctx_now(ctx);
    err_code rc = sbx_daemon_start(sbx, err);
    if (!phase_check(env, rc == ERR_OK, "%s", err))
        return 0;
    sbx_sandbox sb;
    rc = sbx_find(sbx, st->sandbox_name, &sb, err);
    snprintf(ev->sandbox_status, sizeof ev->sandbox_status, "%s",
             rc == ERR_NOTFOUND ? "not listed" : rc != ERR_OK ? "unknown"
             : sb.status[0] ? sb.status : "no status");
    sbx_sandbox_free(&sb);
    phase_say(env, "daemon restart: sbx ls lists sandbox %s as %s%s", st->sandbox_name,
              ev->sandbox_status,
              strcmp(ev->sandbox_status, "stopped") == 0 ? " (as expected)"
                                                          : " (a finding: expected stopped)");
    return phase_check(env, rc == ERR_OK, "after the daemon restart: %s%s", err,
                       rc == ERR_NOTFOUND ? "; the sandbox is gone, so the agent cannot be "
                                            "relaunched in it" : "");
}

/* Sandbox-scoped network rules may not survive a daemon restart
 * (sbx-cli.md 3.10): they go in again before the relaunch needs them. */
static int allow_again(phase_env *env, const sbx_ctx *sbx)
{
    smoke_ctx *ctx = env->ctx;
    sandbox_spec spec = {&ctx->cfg, sbx, ctx->st->run_id, home_dir(), ctx->out};
    char hosts[4 * SANDBOX_HOST_SZ], err[ERR_BUFSZ];
    err_code rc = sandbox_allow_network(&spec, ctx->st->sandbox_name, hosts, sizeof hosts, err);
    if (rc == ERR_OK)
        phase_say(env, "daemon restart: network allowlist of %s applied again: %s",
                  ctx->st->sandbox_name, hosts);
    return phase_check(env, rc == ERR_OK, "%s", err);
}

static void draft_observation(phase_env *env)
{
    state_t *st = env->ctx->st;
    const state_daemon_evidence *ev = &st->evidence.daemon_restart;
    const char *have = state_residual(st, "daemon_restart");
    if (have && have[0])
        return;
    char ready[CLOCK_DUR_SZ], recovered[CLOCK_DUR_SZ], text[STATE_TEXT_SZ];
    clock_format_duration(ev->ready_at_ms - ev->stop_at_ms, ready);
    clock_format_duration(ev->recovery_ms, recovered);
    snprintf(text, sizeof text,
             ACT_DRAFT_PREFIX "after sbx daemon stop the agent %s; after sbx daemon "
             "start -d sbx listed the sandbox as %s; recovery was a full re-provision and "
             "relaunch (launch generation %d ready %s after the stop); the "
             "after-daemon-restart probe passed %s after the stop.",
             ev->agent_exit, ev->sandbox_status, st->agent_process.generation, ready, recovered);
    state_set_residual(st, "daemon_restart", text);
    phase_say(env, "daemon_restart observation drafted (replace it with: band-smoke "
                   "record-observation daemon_restart TEXT...): %s", text);
}

void act_daemon_restart(phase_env *env)
{
    smoke_ctx *ctx = env->ctx;
    char err[ERR_BUFSZ];
    sbx_ctx sbx;
    if (!open_sbx(env, &sbx))
        return;
    ctx->st->phase = RUN_DAEMON_RESTART;
    memset(&ctx->st->evidence.daemon_restart, 0, sizeof ctx->st->evidence.daemon_restart);
    if (!phase_check(env, ctx_save(ctx, err) == ERR_OK, "%s", err) || !stop_daemon(env, &sbx) ||
        !start_daemon(env, &sbx) || !allow_again(env, &sbx))
        return;
    phase_say(env, "daemon restart: recovery is a full re-provision and relaunch (the old "
                   "agent's key died with it)");
    launch_outcome lo;
    if (!start_agent(env, &lo))
        return;
    state_daemon_evidence *ev = &ctx->st->evidence.daemon_restart;
    ev->ready_at_ms = lo.ready_at_ms;
    char ready[CLOCK_DUR_SZ];
    clock_format_duration(ev->ready_at_ms - ev->stop_at_ms, ready);
    phase_say(env, "daemon restart: launch generation %d ready %s after the daemon stop; "
                   "probing it", lo.generation, ready);
    probe_outcome po;
    if (!act_probe_attempt(env, &po) || !phase_check(env, po.passed, "%s", po.detail))
        return;
    ev->recovery_ms = ctx_now(ctx) - ev->stop_at_ms;
    draft_observation(env);
    char took[CLOCK_DUR_SZ];
    clock_format_duration(ev->recovery_ms, took);
    int finding = strcmp(ev->sandbox_status, "stopped") != 0;
    phase_note(env, "agent %s; sandbox %s after the restart%s; generation %d ready and probed; "
                    "recovered in %s",
               ev->agent_exit, ev->sandbox_status,
               finding ? " (FINDING: expected stopped)" : "", ctx->st->agent_process.generation,
               took);
}

/* ---- teardown -------------------------------------------------------------- */

void act_teardown(phase_env *env)
{
    smoke_ctx *ctx = env->ctx;
    state_t *st = ctx->st;
    char err[ERR_BUFSZ];
    sbx_ctx sbx;
    if (!open_sbx(env, &sbx))
        return;
    int was_alive = launch_alive(st);
    err_code rc = launch_stop(st, st, err);
    if (!phase_check(env, rc == ERR_OK, "%s", err))
        return;
    sandbox_spec spec = {&ctx->cfg, &sbx, st->run_id, home_dir(), ctx->out};
    sandbox_teardown_result r;
    rc = sandbox_teardown(&spec, st, &r, err);
    if (!phase_check(env, rc == ERR_OK, "%s", err))
        return;
    phase_note(env, "%s%s", was_alive ? "agent stopped; " : "", r.summary);
}
