/* The probe phases: initial, after-wifi-reconnect and after-sleep-wake.
 * Each sends one marker through the agent (fixtures/probe.h) and records
 * the attempt, passed or not, as that label's latest: the verdict is made
 * of those records alone. */
#include "actions.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform.h"
#include "preflight.h"
#include "probe.h"
#include "redact.h"
#include "sbx.h"


/* After the Wi-Fi cycle the operator's world may have changed: every
 * preflight check again (a FAIL line says which prerequisite went away). */
static err_code recheck_preflight(smoke_ctx *ctx, const sbx_ctx *sbx, char *err)
{
    preflight_input in = {&ctx->cfg, sbx, getenv("HOME")};
    preflight_result r;
    err_code rc = preflight_run(&in, &r, err);
    if (rc == ERR_OK)
        return ERR_OK;
    for (int i = 0; i < r.count; i++)
        if (r.lines[i].mark == PREFLIGHT_FAIL)
            return err_set(err, rc, "a prerequisite no longer holds: %s", r.lines[i].text);
    return rc;
}

/* After the host sleep: sbx has been seen to lose sandboxes across a
 * suspend (sbx-cli.md section 5). A missing sandbox is the finding. */
static err_code recheck_sandbox_listed(smoke_ctx *ctx, const sbx_ctx *sbx, char *err)
{
    state_t *st = ctx->st;
    sbx_sandbox sb;
    err_code rc = sbx_find(sbx, st->sandbox_name, &sb, err);
    char *status = st->evidence.sleep.sandbox_status;
    size_t cap = sizeof st->evidence.sleep.sandbox_status;
    if (rc == ERR_NOTFOUND) {
        snprintf(status, cap, "missing");
        return err_set(err, ERR_NOTFOUND, "sandbox %s is missing from `sbx ls` after the "
                       "wake (a known sbx failure across host sleep): the agent cannot have "
                       "survived it", st->sandbox_name);
    }
    if (rc == ERR_OK)
        snprintf(status, cap, "%s", sb.status[0] ? sb.status : "unknown");
    sbx_sandbox_free(&sb);
    return rc;
}

/* Prerequisites re-checked before probing: the staging guard (the
 * settings may have changed since preflight), an agent and a room to
 * probe, and, after an interruption, the sandbox side (see above). */
static err_code recheck_before_probing(phase_env *env, char *err)
{
    smoke_ctx *ctx = env->ctx;
    err_code rc = config_check_staging(&ctx->cfg, err);
    if (rc != ERR_OK)
        return rc;
    const state_t *st = ctx->st;
    if (!st->agent_id[0] || !st->agent_name[0] || !st->room_id[0]) {
        char cmd[256];
        phase_command(phase_get(PH_LAUNCH), cmd, sizeof cmd);
        return err_set(err, ERR_WRONG_STATE, "run %s has no %s to probe; provision and launch "
                       "with: %s --again", st->run_id,
                       !st->agent_id[0] ? "agent" : !st->room_id[0] ? "room" : "agent name",
                       cmd);
    }
    if (env->def->id == PH_INITIAL)
        return ERR_OK;
    sbx_ctx sbx;
    rc = ctx_sbx(ctx, &sbx, err);
    if (rc == ERR_OK && env->def->id == PH_AFTER_WIFI)
        rc = recheck_preflight(ctx, &sbx, err);
    if (rc == ERR_OK && env->def->id == PH_AFTER_SLEEP)
        rc = recheck_sandbox_listed(ctx, &sbx, err);
    return rc;
}

/* An attempt that never reached the probe still counts as one. */
static void not_probed(probe_outcome *out, const char *why, int64_t now_ms)
{
    memset(out, 0, sizeof *out);
    out->at_ms = now_ms;
    out->latency_ms = -1;
    redact_into(why, out->detail, sizeof out->detail);
}

static int record_attempt(phase_env *env, const probe_outcome *out)
{
    state_t *st = env->ctx->st;
    state_probe p = {.passed = out->passed, .at_ms = out->at_ms, .latency_ms = out->latency_ms,
                     .generation = st->agent_process.generation};
    snprintf(p.label, sizeof p.label, "%s", env->def->probe_label);
    snprintf(p.marker, sizeof p.marker, "%s", out->marker);
    redact_into(out->detail, p.detail, sizeof p.detail);
    return phase_check(env, state_add_probe(st, &p) == ERR_OK,
                       "cannot record the %s probe: run %s already holds %d probe attempts",
                       p.label, st->run_id, STATE_MAX_PROBES);
}

/* ---- the sleep/wake observation ----------------------------------------- */

typedef struct draft {
    char text[STATE_TEXT_SZ];
    size_t len;
} draft;

static void say_more(draft *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say_more(draft *d, const char *fmt, ...)
{
    if (d->len + 1 >= sizeof d->text)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(d->text + d->len, sizeof d->text - d->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        d->len += (size_t)n < sizeof d->text - d->len ? (size_t)n : sizeof d->text - d->len - 1;
}

static void draft_sleep(draft *d, const state_sleep_evidence *ev)
{
    char dur[CLOCK_DUR_SZ], when[CLOCK_ISO_SZ];
    if (strcmp(ev->method, "measured") == 0)
        say_more(d, "the host slept %s (measured by the suspend-aware clocks)",
                 clock_format_duration(ev->slept_ms, dur));
    else if (strcmp(ev->method, "operator") == 0)
        say_more(d, "the operator confirmed a sleep/wake at %s (measured sleep: %s)",
                 clock_format_iso(ev->confirmed_at_ms, when),
                 clock_format_duration(ev->slept_ms, dur));
    else
        say_more(d, "the sleep was neither measured nor confirmed");
}

/* Same process as the one that passed the Wi-Fi probe, and still running? */
static void draft_agent(draft *d, const state_t *st)
{
    const state_agent_process *ap = &st->agent_process;
    const state_probe *wifi = state_latest_probe(st, "after-wifi-reconnect");
    int alive = plat_proc_alive((pid_t)ap->pid, ap->start_token);
    say_more(d, "; the agent process (launch generation %d) is %s", ap->generation,
             alive ? "still running" : "no longer running");
    if (wifi && wifi->generation == ap->generation)
        say_more(d, ", the same process that passed after-wifi-reconnect");
    else if (wifi)
        say_more(d, ", relaunched since after-wifi-reconnect (generation %d then)",
                 wifi->generation);
}

static void draft_probe(draft *d, const probe_outcome *out)
{
    char dur[CLOCK_DUR_SZ];
    if (out->passed)
        say_more(d, "; the after-sleep-wake probe passed in %s (marker %s)",
                 clock_format_duration(out->latency_ms, dur), out->marker);
    else
        say_more(d, "; the after-sleep-wake probe failed: %.160s", out->detail);
}

/* The operator's own words win: a draft only fills an empty observation. */
static void draft_sleep_observation(phase_env *env, const probe_outcome *out)
{
    state_t *st = env->ctx->st;
    const char *have = state_residual(st, "sleep_wake");
    if (have && have[0])
        return;
    draft d = {"", 0};
    const state_sleep_evidence *ev = &st->evidence.sleep;
    say_more(&d, ACT_DRAFT_PREFIX);
    draft_sleep(&d, ev);
    draft_agent(&d, st);
    if (ev->sandbox_status[0])
        say_more(&d, "; the sandbox was %s after the wake", ev->sandbox_status);
    draft_probe(&d, out);
    char clean[STATE_TEXT_SZ];
    redact_into(d.text, clean, sizeof clean);
    state_set_residual(st, "sleep_wake", clean);
    phase_say(env, "sleep_wake observation drafted (replace it with: band-smoke "
                   "record-observation sleep_wake TEXT...): %s", clean);
}

/* ---- the action ----------------------------------------------------------- */

int act_probe_attempt(phase_env *env, probe_outcome *out)
{
    smoke_ctx *ctx = env->ctx;
    state_t *st = ctx->st;
    char err[ERR_BUFSZ];
    if (recheck_before_probing(env, err) == ERR_OK) {
        probe_target target = {st->room_id, st->agent_id, st->agent_name};
        phase_say(env, "probe %s: sending a marker to %s in room %s (deadline %d s)",
                  env->def->probe_label, st->agent_name, st->room_id, ctx->cfg.e2e_timeout_s);
        /* out is filled whatever the code says: the code tells how far the
         * probe got, out holds everything that is recorded */
        (void)probe_run(&ctx->cfg, &target, ctx->out, out, err);
    } else {
        not_probed(out, err, ctx_now(ctx));
    }
    return record_attempt(env, out);
}

void act_probe(phase_env *env)
{
    probe_outcome out;
    if (!act_probe_attempt(env, &out))
        return;
    if (env->def->id == PH_AFTER_SLEEP)
        draft_sleep_observation(env, &out);
    if (!phase_check(env, out.passed, "%s", out.detail))
        return;
    char took[CLOCK_DUR_SZ];
    phase_note(env, "marker %s answered in %s", out.marker,
               clock_format_duration(out.latency_ms, took));
}
