#include "lifecycle.h"

#include "provision.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const names[LIFE__COUNT] = {
    "none", "open", "active", "failing", "closing", "ended", "finished", "stale",
};

const char *life_name(life_state s)
{
    return (int)s >= 0 && s < LIFE__COUNT ? names[s] : "unknown";
}

static const state_phase_result *result_of(const state_t *st, phase_id id)
{
    return state_phase(st, phase_get(id)->name);
}

static int passed(const state_t *st, phase_id id)
{
    const state_phase_result *r = result_of(st, id);
    return r && r->status == RESULT_PASSED;
}

int life_owns_something(const state_t *st)
{
    if (!st)
        return 0;
    /* names count too: a room or agent whose create answer was lost is
     * known by the title or name recorded before the request */
    int own_ids = provision_holds(st) && !st->carried_from[0];
    return st->sandbox_created_by[0] || st->agent_process.generation > 0 || own_ids;
}

/* The first phase from preflight to cleanup whose latest result failed. */
static phase_id first_failed(const state_t *st)
{
    for (phase_id id = PH_PREFLIGHT; id <= PH_CLEANUP; id++) {
        const state_phase_result *r = result_of(st, id);
        if (r && r->status == RESULT_FAILED)
            return id;
    }
    return PH__COUNT;
}

life_state life_of(const state_t *st, int64_t now_ms, phase_id *failed)
{
    if (failed)
        *failed = PH__COUNT;
    if (!st)
        return LIFE_NONE;
    int stale = state_is_stale(st, now_ms);
    if (state_is_terminal(st) && passed(st, PH_CLEANUP))
        return passed(st, PH_TEARDOWN) ? LIFE_FINISHED : stale ? LIFE_STALE : LIFE_ENDED;
    if (stale)
        return LIFE_STALE;
    if (state_is_terminal(st))
        return LIFE_CLOSING;
    if (!life_owns_something(st))
        return LIFE_OPEN;
    phase_id f = first_failed(st);
    if (f == PH__COUNT)
        return LIFE_ACTIVE;
    if (failed)
        *failed = f;
    return LIFE_FAILING;
}

int life_done(const state_t *st, int64_t now_ms, phase_id id)
{
    life_state s = life_of(st, now_ms, NULL);
    /* Start speaks for the run as a whole: on a run that cannot go on it
     * runs its gate, which says what can. */
    if (id == PH_START && s != LIFE_OPEN && s != LIFE_ACTIVE && s != LIFE_FAILING)
        return 0;
    if (s == LIFE_FINISHED && result_of(st, id))
        return 1;
    if (!passed(st, id))
        return 0;
    if (id != PH_REPORT)
        return 1;
    const state_phase_result *c = result_of(st, PH_CLEANUP), *r = result_of(st, PH_REPORT);
    return c && c->status == RESULT_PASSED && r->at_ms >= c->at_ms;
}

/* ---- what each phase may do in each state ------------------------------- */

typedef struct why {
    const state_t *st;
    char *reason;
    size_t cap;
    char *cmd;
    size_t cmd_cap;
} why;

static int refuse(why *w, phase_id next, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(why *w, phase_id next, const char *fmt, ...)
{
    char cmd[512] = "";
    if (next != PH__COUNT)
        phase_command(phase_get(next), cmd, sizeof cmd);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(w->reason, w->cap, fmt, ap);
    va_end(ap);
    if (cmd[0] && n >= 0 && (size_t)n < w->cap)
        snprintf(w->reason + n, w->cap - (size_t)n, ": %s", cmd);
    if (w->cmd_cap)
        snprintf(w->cmd, w->cmd_cap, "%s", cmd);
    return 0;
}

/* The phase ENDED runs next: the report once after cleanup, then teardown. */
static phase_id ended_next(const state_t *st, int64_t now_ms)
{
    return life_done(st, now_ms, PH_REPORT) ? PH_TEARDOWN : PH_REPORT;
}

static int start_allowed(why *w, life_state s, int64_t now_ms)
{
    const state_t *st = w->st;
    if (s == LIFE_CLOSING)
        return refuse(w, PH_CLEANUP, "run %s was marked %s and is not finished: cleanup, "
                      "report and teardown end it before a new run starts; run",
                      st->run_id, state_run_phase_name(st->phase));
    if (s == LIFE_ENDED)
        return refuse(w, ended_next(st, now_ms), "run %s has ended (%s) and is not finished "
                      "yet; a new run starts once report and teardown have passed; run",
                      st->run_id, state_run_phase_name(st->phase));
    return 1;
}

static int work_allowed(why *w, life_state s, phase_id id, phase_id failed, int64_t now_ms)
{
    const state_t *st = w->st;
    switch (s) {
    case LIFE_NONE:
        return refuse(w, PH_START, "no run has started yet; start one with");
    case LIFE_OPEN:
    case LIFE_ACTIVE:
        return 1;
    case LIFE_FAILING: {
        if (id == failed)
            return 1;
        const state_phase_result *r = result_of(st, failed);
        char retry[512];
        phase_command(phase_get(failed), retry, sizeof retry);
        return refuse(w, PH_CLEANUP, "run %s: %s failed (%.200s), so the run ends: cleanup, "
                      "report and teardown follow (to retry %s instead, run it alone "
                      "before cleanup: %s); cleanup",
                      st->run_id, phase_get(failed)->ctest_name, r->detail,
                      phase_get(failed)->ctest_name, retry);
    }
    case LIFE_CLOSING:
        return refuse(w, PH_CLEANUP, "run %s was marked %s and is never continued; cleanup, "
                      "report and teardown end it", st->run_id,
                      state_run_phase_name(st->phase));
    case LIFE_ENDED:
        return refuse(w, ended_next(st, now_ms), "run %s has ended (%s) and is never "
                      "continued; finish it", st->run_id, state_run_phase_name(st->phase));
    case LIFE_FINISHED:
        return refuse(w, PH_START, "run %s is finished (%s) and is never continued; a new run "
                      "starts with", st->run_id, state_run_phase_name(st->phase));
    case LIFE_STALE:
    default:
        return refuse(w, PH_START, "run %s has been idle for over 12 h and is never "
                      "continued; start a new run (it archives this one) with", st->run_id);
    }
}

/* The phase an ACTIVE or OPEN run goes on with: the first of preflight to
 * daemon-restart that has not passed. */
static phase_id resume_point(const state_t *st)
{
    for (phase_id id = PH_PREFLIGHT; id <= PH_DAEMON_RESTART; id++)
        if (!passed(st, id))
            return id;
    return PH_CLEANUP;
}

/* Cleanup and teardown undo what a run made: with no run, or an open one,
 * there is nothing to undo, and the run is not ended for it. */
static int nothing_to_undo(why *w, life_state s, const char *what)
{
    if (s == LIFE_NONE)
        return refuse(w, PH_START, "no run has started yet; start one with");
    return refuse(w, resume_point(w->st), "run %s has made nothing yet (no sandbox it created, "
                  "no agent or room), so there is nothing to %s and the run stays open; it "
                  "goes on with", w->st->run_id, what);
}

static int cleanup_allowed(why *w, life_state s)
{
    const state_t *st = w->st;
    if (s == LIFE_NONE || s == LIFE_OPEN)
        return nothing_to_undo(w, s, "clean up");
    if (s == LIFE_ACTIVE && !passed(st, PH_DAEMON_RESTART)) {
        char give_up[256];
        phase_smoke_command("record-phase failed", give_up, sizeof give_up);
        return refuse(w, resume_point(st), "run %s is in progress: cleanup ends a run after "
                      "phase.10 or a failure (to give it up now: %s); it goes on with",
                      st->run_id, give_up);
    }
    return 1;
}

static int teardown_allowed(why *w, life_state s)
{
    const state_t *st = w->st;
    if (s == LIFE_NONE || s == LIFE_OPEN)
        return nothing_to_undo(w, s, "tear down");
    if (passed(st, PH_CLEANUP) || st->phase == RUN_FAILED)
        return 1;
    const state_phase_result *c = result_of(st, PH_CLEANUP);
    return refuse(w, s == LIFE_ACTIVE && !passed(st, PH_DAEMON_RESTART) ? resume_point(st)
                                                                         : PH_CLEANUP,
                  "teardown removes the sandbox only after cleanup passed or the run was "
                  "marked failed (run %s: cleanup %s); run",
                  st->run_id, c ? state_result_name(c->status) : "not run");
}

int life_allows(const state_t *st, int64_t now_ms, phase_id id, char *reason, size_t cap,
                char *cmd, size_t cmd_cap)
{
    why w = {st, reason, cap, cmd, cmd_cap};
    if (cmd_cap)
        cmd[0] = '\0';
    reason[0] = '\0';
    phase_id failed;
    life_state s = life_of(st, now_ms, &failed);
    switch (id) {
    case PH_START:
        return start_allowed(&w, s, now_ms);
    case PH_REPORT:
        return 1;
    case PH_CLEANUP:
        return cleanup_allowed(&w, s);
    case PH_TEARDOWN:
        return teardown_allowed(&w, s);
    default:
        return work_allowed(&w, s, id, failed, now_ms);
    }
}

int life_may_record_skip(const state_t *st, int64_t now_ms, phase_id id)
{
    life_state s = life_of(st, now_ms, NULL);
    if (s == LIFE_NONE || s == LIFE_FINISHED || s == LIFE_STALE)
        return 0; /* a save would revive a stale run */
    const state_phase_result *r = result_of(st, id);
    return !r || r->status == RESULT_SKIPPED;
}

int life_allows_record(const state_t *st, int64_t now_ms, run_phase target, char *reason,
                       size_t cap)
{
    life_state s = life_of(st, now_ms, NULL);
    int observation = target == RUN__COUNT;
    int ok;
    switch (s) {
    case LIFE_NONE:
        snprintf(reason, cap, "no run yet; start one with the start phase");
        return target == RUN_STARTED;
    case LIFE_CLOSING: /* marking it again as it is changes nothing */
        ok = observation || target == st->phase;
        break;
    case LIFE_ENDED:
        ok = observation;
        break;
    case LIFE_FINISHED: /* `started` is the operator asking for a new run */
        ok = target == RUN_STARTED;
        break;
    default:
        ok = 1;
    }
    if (!ok)
        snprintf(reason, cap, "run %s %s (%s); its results are never rewritten; %s",
                 st->run_id,
                 s == LIFE_FINISHED ? "is finished" : s == LIFE_ENDED ? "has ended"
                                                                       : "is already marked",
                 state_run_phase_name(st->phase),
                 s == LIFE_FINISHED ? "a new run starts with phase.01"
                                    : "`band-smoke status` says what finishes it");
    return ok;
}

/* A failed phase of the workflow ends the run failed; a cleanup that had
 * to be retried does not. */
run_phase life_end_phase(const state_t *st, int64_t now_ms)
{
    (void)now_ms;
    if (st->phase == RUN_FAILED)
        return RUN_FAILED;
    phase_id f = first_failed(st);
    return f < PH_CLEANUP ? RUN_FAILED : RUN_COMPLETED;
}
