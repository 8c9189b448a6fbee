/* The phases that act on the run itself: start, the two operator
 * checkpoints, cleanup (the end of the run) and the report. */
#include "actions.h"

#include <string.h>
#include <sys/stat.h>

#include "engine.h"
#include "launch.h"
#include "lifecycle.h"
#include "provision.h"

const char act_scope[] =
    "SCOPE: this run proves that a headless band-sdk agent inside a real Docker Sandbox\n"
    "receives a WebSocket message and replies over REST against staging, and that it\n"
    "recovers from three interruptions: a manual Wi-Fi cycle and a host sleep/wake (both\n"
    "need the operator) and a sandbox daemon restart (the suite runs that one). All three\n"
    "are mandatory: a report missing any of them is INCOMPLETE.";

static void announce_rotation(phase_env *env, const char *old_id, const char *why)
{
    const state_t *st = env->ctx->st;
    phase_say(env, "archived run %s (%s) as %s/state.%s.json", old_id, why,
              env->ctx->store.dir, old_id);
    if (st->room_id[0] || st->agent_id[0])
        phase_say(env, "carried over resources run %s never reaped: room %s, agent %s "
                       "(the next launch reaps them first)", old_id,
                  st->room_id[0] ? st->room_id : "-", st->agent_id[0] ? st->agent_id : "-");
}

void act_start(phase_env *env)
{
    smoke_ctx *ctx = env->ctx;
    char err[ERR_BUFSZ];
    if (!ctx->st) {
        ctx->st = state_new(&ctx->store);
        if (!phase_check(env, ctx->st != NULL, "out of memory creating the run"))
            return;
    } else {
        const char *why = state_is_terminal(ctx->st) ? state_run_phase_name(ctx->st->phase)
                          : state_is_stale(ctx->st, ctx_now(ctx)) ? "idle for over 12 h"
                          : env->again ? "replaced by --again" : NULL;
        if (why) {
            char old_id[sizeof ctx->st->run_id];
            memcpy(old_id, ctx->st->run_id, sizeof old_id);
            err_code rc = state_rotate(&ctx->store, &ctx->st, err);
            if (!phase_check(env, rc == ERR_OK, "cannot archive run %s: %s", old_id, err))
                return;
            announce_rotation(env, old_id, why);
        }
    }
    ctx->st->phase = RUN_STARTED;
    phase_say(env, "%s", act_scope);
    phase_note(env, "run %s started; state in %s", ctx->st->run_id, ctx->store.dir);
}

void act_wifi_checkpoint(phase_env *env)
{
    state_t *st = env->ctx->st;
    st->phase = RUN_AWAITING_WIFI;
    memset(&st->evidence.wifi, 0, sizeof st->evidence.wifi);
    phase_note(env, "run %s awaits the operator's Wi-Fi cycle (agent generation %d)",
               st->run_id, st->agent_process.generation);
}

void act_sleep_checkpoint(phase_env *env)
{
    state_t *st = env->ctx->st;
    state_sleep_evidence *ev = &st->evidence.sleep;
    st->phase = RUN_AWAITING_SLEEP;
    memset(ev, 0, sizeof *ev);
    ev->checkpoint = clock_read(&env->ctx->clock);
    ev->slept_ms = -1;
    phase_note(env, "run %s awaits the host sleep/wake; clocks recorded (awake %lld ms, "
                    "total %lld ms)", st->run_id, (long long)ev->checkpoint.awake_ms,
               (long long)ev->checkpoint.total_ms);
}

static int file_has_content(const char *dir, const char *name)
{
    char path[STATE_PATH_SZ + 32];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &sb) == 0 && sb.st_size > 0;
}

void act_report(phase_env *env)
{
    smoke_ctx *ctx = env->ctx;
    if (!ctx->st) {
        phase_note(env, "no run yet: nothing to report");
        return;
    }
    char err[ERR_BUFSZ];
    err_code rc = engine_render(ctx, err);
    if (!phase_check(env, rc == ERR_OK, "rendering the reports failed: %s", err))
        return;
    phase_check(env, file_has_content(ctx->store.dir, "evidence.md"), "evidence.md is missing");
    phase_check(env, file_has_content(ctx->store.dir, "junit.xml"), "junit.xml is missing");
    phase_note(env, "verdict %s; %s/evidence.md and junit.xml",
               state_verdict_name(state_verdict_of(ctx->st)), ctx->store.dir);
}

/* Reap room then agent, each on its own (a failed reap keeps its id for the
 * next attempt), stop the agent, and end the run: failed when it was marked
 * failed or a phase of it failed (no cleanup turns that into a pass),
 * completed otherwise (docs/lifecycle.md). */
void act_cleanup(phase_env *env)
{
    smoke_ctx *ctx = env->ctx;
    state_t *st = ctx->st;
    char err[ERR_BUFSZ];
    int had_room = st->room_id[0] || st->room_title[0], had_agent = st->agent_id[0] != '\0';
    /* A name without an id: a run killed while Band registered its agent;
     * provision_reap finds that agent by the name. */
    int by_name = !had_agent && st->agent_name[0] != '\0';
    err_code reaped = provision_reap(&ctx->cfg, st, ctx_save_cb, ctx, err);
    phase_check(env, reaped == ERR_OK, "reaping the Band resources failed: %s (the ids stay "
                "in the run state; run cleanup again)", err);

    int was_alive = launch_alive(st);
    err_code stopped = launch_stop(st, st, err);
    phase_check(env, stopped == ERR_OK, "stopping the agent failed: %s", err);
    /* A launch interrupted before it saved the state leaves a launcher no
     * state records: the run ends with no agent of it running. */
    int strays = 0;
    err_code swept = launch_stop_strays(ctx->agent_log, st, ctx->out, &strays, err);
    phase_check(env, swept == ERR_OK, "stopping a stray agent launcher failed: %s", err);
    if (stopped == ERR_OK)
        stopped = swept;

    if (reaped == ERR_OK && stopped == ERR_OK)
        st->phase = life_end_phase(st, ctx_now(ctx));
    phase_note(env, "%s, %s; agent process %s; run %s",
               had_room ? "room reaped" : "no room to reap",
               had_agent ? "agent reaped"
               : by_name ? "agent sought and reaped by its recorded name"
                         : "no agent to reap",
               was_alive ? "stopped" : "already ended", state_run_phase_name(st->phase));
}
