#include "watch.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gates.h"
#include "phases.h"
#include "progress.h"
#include "redact.h"
#include "sig.h"

/* One watch: the loop's view of the run, rebuilt on every look. */
typedef struct watcher {
    smoke_ctx *ctx;
    const watch_opts *opts;
    int64_t deadline_mono;
    progress pg;
    int waiting;        /* pg is running */
    int64_t cp_at_ms;   /* when the checkpoint passed */
    run_phase held_at;  /* the checkpoint's run phase */
    agentlog_scan scan; /* agent.log since the checkpoint, the gate's way */
    gate_verdict gate;  /* the resuming phase's gate, as of this look */
    int said_drop, said_back, said_wake;
} watcher;

/* "12:01:03", the operator's own clock. */
static const char *hms(int64_t wall_ms, char buf[16])
{
    time_t t = (time_t)(wall_ms / 1000);
    struct tm tm;
    if (!localtime_r(&t, &tm) || !strftime(buf, 16, "%H:%M:%S", &tm))
        snprintf(buf, 16, "?");
    return buf;
}

static void wait_for(watcher *w, const char *what)
{
    if (w->waiting)
        progress_end(&w->pg, NULL);
    int64_t left = w->deadline_mono - clock_mono_ms();
    progress_begin(&w->pg, w->ctx->out, what, left > 0 ? left : 0);
    w->waiting = 1;
}

static void say(watcher *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(watcher *w, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (w->waiting)
        progress_end(&w->pg, NULL);
    w->waiting = 0;
    redact_fprintf(w->ctx->out, "%s\n", msg);
    fflush(w->ctx->out);
}

static phase_id resume_phase(run_phase held)
{
    return held == RUN_AWAITING_WIFI ? PH_AFTER_WIFI : PH_AFTER_SLEEP;
}

static phase_id checkpoint_phase(run_phase held)
{
    return held == RUN_AWAITING_WIFI ? PH_WIFI_CHECKPOINT : PH_SLEEP_CHECKPOINT;
}

/* Loads the run afresh and asks the gate and agent.log. 0 = keep watching,
 * 1 = the run moved on, -1 = cannot read. */
static int look(watcher *w)
{
    smoke_ctx *ctx = w->ctx;
    char err[ERR_BUFSZ];
    err_code rc = ctx_load(ctx, err);
    if (rc != ERR_OK) {
        say(w, "ERROR: %s: %s", err_str(rc), err);
        return -1;
    }
    if (ctx->st->phase != w->held_at)
        return 1;
    gate_check(ctx, resume_phase(w->held_at), &w->gate);
    rc = agentlog_scan_file(ctx->agent_log, ctx->st->agent_process.log_offset, w->cp_at_ms,
                            &ctx->patterns, &w->scan, err);
    if (rc != ERR_OK)
        memset(&w->scan, 0, sizeof w->scan);
    return 0;
}

static void resume_command(const watcher *w, char *cmd, size_t cap)
{
    phase_command(phase_get(resume_phase(w->held_at)), cmd, cap);
}

/* The disconnect and (when tell_back) the reconnect, each told once, as
 * agent.log shows them. */
static void tell_socket(watcher *w, const char *drop_advice, int tell_back)
{
    char at[16], after[CLOCK_DUR_SZ], outage[CLOCK_DUR_SZ];
    const agentlog_scan *s = &w->scan;
    if (s->disconnect.at_ms && !w->said_drop) {
        w->said_drop = 1;
        clock_format_duration(s->disconnect.at_ms - w->cp_at_ms, after);
        say(w, "WebSocket disconnected at %s (%s after the checkpoint)%s%s",
            hms(s->disconnect.at_ms, at), after, s->reconnect.at_ms ? "" : ": ",
            s->reconnect.at_ms ? "" : drop_advice);
        if (!s->reconnect.at_ms)
            wait_for(w, "the WebSocket reconnect in agent.log");
    }
    if (tell_back && s->reconnect.at_ms && w->said_drop && !w->said_back) {
        w->said_back = 1;
        clock_format_duration(s->reconnect.at_ms - s->disconnect.at_ms, outage);
        say(w, "WebSocket reconnected at %s, outage %s", hms(s->reconnect.at_ms, at), outage);
    }
}

static int finish(watcher *w, const char *what_is_complete)
{
    char cmd[512];
    resume_command(w, cmd, sizeof cmd);
    say(w, "%s: resume with %s", what_is_complete, cmd);
    return 0;
}

static int give_up(watcher *w)
{
    char waited[CLOCK_DUR_SZ];
    clock_format_duration(w->opts->timeout_ms, waited);
    const char *missing = w->gate.reason[0] ? w->gate.reason
                          : "the WebSocket reconnect after its drop";
    say(w, "watch: gave up after %s; still missing: %s", waited, missing);
    return 1;
}

static int step_wifi(watcher *w)
{
    tell_socket(w, "turn Wi-Fi back on now", 0);
    char cmd[512];
    resume_command(w, cmd, sizeof cmd);
    if (w->gate.fails) {
        say(w, "FAILED: %s", w->gate.reason);
        say(w, "record it with: %s", cmd);
        return 1;
    }
    if (!w->gate.open)
        return -1;
    const state_wifi_evidence *ev = &w->ctx->st->evidence.wifi;
    char at[16], outage[CLOCK_DUR_SZ];
    clock_format_duration(ev->reconnect_at_ms - ev->disconnect_at_ms, outage);
    say(w, "WebSocket reconnected at %s, outage %s: resume with %s",
        hms(ev->reconnect_at_ms, at), outage, cmd);
    return 0;
}

static int step_sleep(watcher *w)
{
    const state_sleep_evidence *ev = &w->ctx->st->evidence.sleep;
    char slept[CLOCK_DUR_SZ], at[16];
    /* The watch itself sleeps with the host: a jump in the clocks' gap
     * between two looks is the wake. */
    if (!w->said_wake && ev->slept_ms >= 1000) {
        w->said_wake = 1;
        clock_format_duration(ev->slept_ms, slept);
        say(w, "the host woke at %s; the clocks measured a sleep of %s%s",
            hms(ctx_now(w->ctx), at), slept,
            ev->slept_ms >= GATE_HOST_SLEEP_MIN_MS ? ""
            : " (under 30 s: sleep it again for about a minute)");
    }
    tell_socket(w, "waiting for the agent to reconnect", 1);
    if (!w->gate.open || (w->scan.disconnect.at_ms && !w->scan.reconnect.at_ms))
        return -1;
    char what[256];
    clock_format_duration(ev->slept_ms, slept);
    snprintf(what, sizeof what, "the sleep is %s (%s)%s",
             !strcmp(ev->method, "measured") ? "measured" : "confirmed by the operator",
             !strcmp(ev->method, "measured") ? slept : "the clocks could not tell",
             w->scan.reconnect.at_ms ? "; the agent's WebSocket reconnected"
             : "; agent.log shows no WebSocket drop since the checkpoint");
    return finish(w, what);
}

static int open_watch(watcher *w)
{
    smoke_ctx *ctx = w->ctx;
    char err[ERR_BUFSZ];
    err_code rc = ctx_load(ctx, err);
    if (rc == ERR_NOTFOUND) {
        redact_fprintf(ctx->out, "watch: no run yet; nothing to watch\n");
        return 1;
    }
    if (rc != ERR_OK) {
        redact_fprintf(ctx->out, "ERROR: %s: %s\n", err_str(rc), err);
        return 1;
    }
    w->held_at = ctx->st->phase;
    if (w->held_at != RUN_AWAITING_WIFI && w->held_at != RUN_AWAITING_SLEEP) {
        redact_fprintf(ctx->out, "watch: run %s is %s, not at the Wi-Fi or the sleep "
                                 "checkpoint; nothing to watch (band-smoke status says what "
                                 "is next)\n", ctx->st->run_id,
                       state_run_phase_name(ctx->st->phase));
        return 1;
    }
    const phase_def *cp_def = phase_get(checkpoint_phase(w->held_at));
    const state_phase_result *cp = state_phase(ctx->st, cp_def->name);
    if (!cp || cp->status != RESULT_PASSED) {
        redact_fprintf(ctx->out, "watch: run %s is %s but %s has not passed; nothing to "
                                 "watch (band-smoke status says what is next)\n",
                       ctx->st->run_id, state_run_phase_name(ctx->st->phase),
                       cp_def->ctest_name);
        return 1;
    }
    w->cp_at_ms = cp->at_ms;
    char at[16];
    if (w->held_at == RUN_AWAITING_WIFI)
        redact_fprintf(ctx->out, "watch: run %s, Wi-Fi checkpoint at %s; following %s. "
                                 "Turn Wi-Fi off now if it is still on.\n",
                       ctx->st->run_id, hms(w->cp_at_ms, at), ctx->agent_log);
    else
        redact_fprintf(ctx->out, "watch: run %s, sleep checkpoint at %s; following the "
                                 "clocks and %s. Put the host to sleep now; this watch "
                                 "reports when it wakes.\n",
                       ctx->st->run_id, hms(w->cp_at_ms, at), ctx->agent_log);
    wait_for(w, w->held_at == RUN_AWAITING_WIFI ? "the WebSocket disconnect in agent.log"
                                                : "the host to sleep and wake");
    return 0;
}

int watch_run(smoke_ctx *ctx, const watch_opts *opts)
{
    watcher w = {.ctx = ctx, .opts = opts};
    w.deadline_mono = clock_mono_ms() + opts->timeout_ms;
    if (open_watch(&w) != 0)
        return 1;
    for (;;) {
        if (sig_pending()) { /* Ctrl-C: the watch only reads, so stopping is free */
            say(&w, "watch: stopped by %s; the run is as it was", sig_name(sig_pending()));
            return sig_exit_code();
        }
        int moved = look(&w);
        if (moved < 0)
            return 1;
        if (moved > 0) {
            say(&w, "watch: the run moved on (now %s); nothing left to watch",
                state_run_phase_name(ctx->st->phase));
            return 0;
        }
        int done = w.held_at == RUN_AWAITING_WIFI ? step_wifi(&w) : step_sleep(&w);
        if (done >= 0)
            return done;
        if (clock_mono_ms() >= w.deadline_mono)
            return give_up(&w);
        progress_tick(&w.pg);
        clock_sleep_ms(opts->poll_ms);
    }
}

int watch_main(smoke_ctx *ctx, int argc, char **argv)
{
    watch_opts opts = {(int64_t)WATCH_DEFAULT_TIMEOUT_S * 1000, WATCH_POLL_MS};
    for (int i = 0; i < argc; i++) {
        char *end = NULL;
        long secs = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
        if (strcmp(argv[i], "--timeout") != 0 || !end || *end || secs <= 0 || secs > 86400) {
            fputs("usage: band-smoke watch [--timeout SECONDS]\n", stderr);
            return 2;
        }
        opts.timeout_ms = (int64_t)secs * 1000;
        i++;
    }
    return watch_run(ctx, &opts);
}
