#include "gates.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lifecycle.h"
#include "platform.h"

/* Which runs a phase may touch at all is the lifecycle's (lifecycle.h);
 * NEED_NOTHING marks the phases whose other rules do not apply. */
typedef enum run_need {
    NEED_NOTHING, /* start, report: the lifecycle alone decides */
    NEED_RUN      /* the rules below apply too */
} run_need;

typedef int (*gate_fn)(smoke_ctx *ctx, gate_verdict *out);

typedef struct gate_rule {
    run_need run;
    phase_id after;      /* must have passed in this run; PH__COUNT = none */
    const char *probe;   /* latest attempt must have passed; NULL = none */
    gate_fn evidence;    /* extra check; NULL = none */
} gate_rule;

static int agent_running(smoke_ctx *ctx, gate_verdict *out);
static int wifi_evidence(smoke_ctx *ctx, gate_verdict *out);
static int sleep_evidence(smoke_ctx *ctx, gate_verdict *out);

#define NONE PH__COUNT
static const gate_rule rules[PH__COUNT] = {
    [PH_START]            = {NEED_NOTHING, NONE, NULL, NULL},
    [PH_PREFLIGHT]        = {NEED_RUN, PH_START, NULL, NULL},
    [PH_SANDBOX]          = {NEED_RUN, PH_PREFLIGHT, NULL, NULL},
    [PH_LAUNCH]           = {NEED_RUN, PH_SANDBOX, NULL, NULL},
    [PH_INITIAL]          = {NEED_RUN, PH_LAUNCH, NULL, agent_running},
    [PH_WIFI_CHECKPOINT]  = {NEED_RUN, NONE, "initial", NULL},
    [PH_AFTER_WIFI]       = {NEED_RUN, PH_WIFI_CHECKPOINT, NULL, wifi_evidence},
    [PH_SLEEP_CHECKPOINT] = {NEED_RUN, NONE, "after-wifi-reconnect", NULL},
    [PH_AFTER_SLEEP]      = {NEED_RUN, PH_SLEEP_CHECKPOINT, NULL, sleep_evidence},
    [PH_DAEMON_RESTART]   = {NEED_RUN, NONE, "after-sleep-wake", NULL},
    [PH_CLEANUP]          = {NEED_RUN, NONE, NULL, NULL},
    [PH_REPORT]           = {NEED_NOTHING, NONE, NULL, NULL},
    [PH_TEARDOWN]         = {NEED_RUN, NONE, NULL, NULL},
};

/* Which checkpoint holds which phases, and which phase releases it. */
typedef struct hold_rule {
    run_phase waiting;
    phase_id checkpoint;
    phase_id resume;
    const char *instruction;
} hold_rule;

static const hold_rule holds[] = {
    {RUN_AWAITING_WIFI, PH_WIFI_CHECKPOINT, PH_AFTER_WIFI,
     "turn Wi-Fi off until agent.log shows the WebSocket disconnect, turn it back on"},
    {RUN_AWAITING_SLEEP, PH_SLEEP_CHECKPOINT, PH_AFTER_SLEEP,
     "sleep the host for about a minute, then wake it"},
};

/* Closes the gate; `cmd` (may be "") is the command that goes on. */
static int close_gate_to(gate_verdict *out, const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int close_gate_to(gate_verdict *out, const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->reason, sizeof out->reason, fmt, ap);
    va_end(ap);
    snprintf(out->cmd, sizeof out->cmd, "%s", cmd);
    out->open = 0;
    return 0;
}

#define close_gate(out, ...) close_gate_to((out), "", __VA_ARGS__)

static void command_for(phase_id id, char *buf, size_t cap)
{
    phase_command(phase_get(id), buf, cap);
}

int gate_held(const smoke_ctx *ctx, phase_id id, gate_verdict *out)
{
    const state_t *st = ctx->st;
    if (!st)
        return 0;
    for (size_t i = 0; i < sizeof holds / sizeof holds[0]; i++) {
        const hold_rule *h = &holds[i];
        if (st->phase != h->waiting || id <= h->checkpoint || id == h->resume)
            continue;
        const state_phase_result *cp = state_phase(st, phase_get(h->checkpoint)->name);
        const state_phase_result *rs = state_phase(st, phase_get(h->resume)->name);
        if (!cp || cp->status != RESULT_PASSED)
            continue;
        /* passed: released; failed: the run ends (lifecycle FAILING) */
        if (rs && rs->status != RESULT_SKIPPED && rs->at_ms >= cp->at_ms)
            continue;
        char resume[256];
        command_for(h->resume, resume, sizeof resume);
        close_gate_to(out, resume, "run %s waits at the %s: %s, then resume with: %s",
                      st->run_id, phase_get(h->checkpoint)->title, h->instruction, resume);
        return 1;
    }
    return 0;
}

static int after_ok(smoke_ctx *ctx, phase_id after, gate_verdict *out)
{
    if (after == NONE)
        return 1;
    const phase_def *need = phase_get(after);
    const state_phase_result *r = state_phase(ctx->st, need->name);
    if (r && r->status == RESULT_PASSED)
        return 1;
    char cmd[256];
    command_for(after, cmd, sizeof cmd);
    return close_gate_to(out, cmd, "%s has not passed in run %s (%s); run it first: %s",
                         need->ctest_name, ctx->st->run_id,
                         r ? state_result_name(r->status) : "not run", cmd);
}

static const phase_def *phase_of_probe(const char *label)
{
    for (int i = 0; i < PH__COUNT; i++) {
        const phase_def *d = phase_get((phase_id)i);
        if (d->probe_label && strcmp(d->probe_label, label) == 0)
            return d;
    }
    return NULL;
}

static int probe_ok(smoke_ctx *ctx, const char *label, gate_verdict *out)
{
    if (!label)
        return 1;
    const state_probe *p = state_latest_probe(ctx->st, label);
    if (p && p->passed)
        return 1;
    char cmd[256] = "";
    const phase_def *d = phase_of_probe(label);
    if (d)
        phase_command(d, cmd, sizeof cmd);
    if (!p)
        return close_gate_to(out, cmd, "the '%s' probe has not run in run %s; run it first: %s",
                             label, ctx->st->run_id, cmd);
    return close_gate_to(out, cmd, "the latest '%s' probe failed (%s); retry it first: %s",
                         label, p->detail, cmd);
}

void gate_check(smoke_ctx *ctx, phase_id id, gate_verdict *out)
{
    const gate_rule *r = &rules[id];
    memset(out, 0, sizeof *out);
    if (gate_held(ctx, id, out))
        return;
    out->open = life_allows(ctx->st, ctx_now(ctx), id, out->reason, sizeof out->reason,
                            out->cmd, sizeof out->cmd);
    if (!out->open || r->run == NEED_NOTHING)
        return;
    out->open = after_ok(ctx, r->after, out) && probe_ok(ctx, r->probe, out) &&
                (!r->evidence || r->evidence(ctx, out));
}

/* ---- evidence checks ---------------------------------------------------- */

static int agent_running(smoke_ctx *ctx, gate_verdict *out)
{
    const state_agent_process *ap = &ctx->st->agent_process;
    char launch[256], again[256];
    command_for(PH_LAUNCH, launch, sizeof launch);
    phase_smoke_command("phase launch --again", again, sizeof again);
    if (ap->generation == 0)
        return close_gate_to(out, launch, "no agent has been launched in run %s; launch it "
                             "with: %s", ctx->st->run_id, launch);
    if (!plat_proc_alive((pid_t)ap->pid, ap->start_token))
        return close_gate_to(out, again, "the agent (launch generation %d) is no longer "
                             "running%s%s; relaunch it with: %s", ap->generation,
                             ap->exit_detail[0] ? ": " : "", ap->exit_detail, again);
    if (ap->ready_at_ms == 0)
        return close_gate_to(out, again, "the agent (launch generation %d) never logged its "
                             "readiness line; relaunch it with: %s", ap->generation, again);
    return 1;
}

/* A relaunched agent cannot prove the Wi-Fi cycle, and nothing in this
 * run can bring the original back: the way on is to give the run up. */
static int same_agent_as_initial(smoke_ctx *ctx, gate_verdict *out)
{
    const state_probe *initial = state_latest_probe(ctx->st, "initial");
    int gen = ctx->st->agent_process.generation;
    char give_up[256];
    phase_smoke_command("record-phase failed", give_up, sizeof give_up);
    if (!initial || initial->generation != gen)
        return close_gate_to(out, give_up,
                             "the running agent (launch generation %d) is not the one that "
                             "passed the initial probe (generation %d): the Wi-Fi cycle must be "
                             "survived by the same process; give this run up (cleanup, report "
                             "and teardown then end it) with: %s",
                             gen, initial ? initial->generation : 0, give_up);
    return agent_running(ctx, out);
}

/* A disconnect without a reconnect: wait while the window is open, fail
 * once it has passed. */
static int no_reconnect(smoke_ctx *ctx, const agentlog_scan *scan, const char *cmd,
                        gate_verdict *out)
{
    int64_t since = ctx_now(ctx) - scan->disconnect.at_ms;
    int64_t window = (int64_t)ctx->cfg.reconnect_window_s * 1000;
    char when[CLOCK_ISO_SZ], waited[CLOCK_DUR_SZ];
    clock_format_iso(scan->disconnect.at_ms, when);
    clock_format_duration(since, waited);
    if (since < window)
        return close_gate_to(out, cmd, "agent.log shows the WebSocket disconnect at %s but no "
                          "reconnect after it yet (looked for \"%s\" in %s); turn Wi-Fi back "
                          "on, wait for the reconnect line, then run: %s",
                          when, ctx->patterns.reconnect, ctx->agent_log, cmd);
    state_wifi_evidence *ev = &ctx->st->evidence.wifi;
    ev->disconnect_at_ms = scan->disconnect.at_ms;
    ev->reconnect_at_ms = 0;
    ev->generation = ctx->st->agent_process.generation;
    snprintf(ev->disconnect_line, sizeof ev->disconnect_line, "%s", scan->disconnect.line);
    out->fails = 1;
    return close_gate(out, "the agent did not recover from the Wi-Fi cycle: agent.log shows "
                      "the WebSocket disconnect at %s and no reconnect in the %s since "
                      "(window SMOKE_RECONNECT_WINDOW_S=%d s)",
                      when, waited, ctx->cfg.reconnect_window_s);
}

static int wifi_evidence(smoke_ctx *ctx, gate_verdict *out)
{
    if (!same_agent_as_initial(ctx, out))
        return 0;
    state_t *st = ctx->st;
    const state_phase_result *cp = state_phase(st, phase_get(PH_WIFI_CHECKPOINT)->name);
    char when[CLOCK_ISO_SZ], cmd[256], err[ERR_BUFSZ];
    clock_format_iso(cp->at_ms, when);
    command_for(PH_AFTER_WIFI, cmd, sizeof cmd);

    agentlog_scan scan;
    if (agentlog_scan_file(ctx->agent_log, st->agent_process.log_offset, cp->at_ms,
                           &ctx->patterns, &scan, err) != ERR_OK)
        return close_gate(out, "cannot read agent.log: %s", err);
    if (!scan.disconnect.at_ms)
        return close_gate_to(out, cmd, "agent.log shows no WebSocket disconnect since the Wi-Fi "
                          "checkpoint at %s (looked for \"%s\" in %s); turn Wi-Fi off until "
                          "it appears, turn it back on, then run: %s",
                          when, ctx->patterns.disconnect, ctx->agent_log, cmd);
    if (!scan.reconnect.at_ms)
        return no_reconnect(ctx, &scan, cmd, out);
    state_wifi_evidence *ev = &st->evidence.wifi;
    ev->disconnect_at_ms = scan.disconnect.at_ms;
    ev->reconnect_at_ms = scan.reconnect.at_ms;
    ev->generation = st->agent_process.generation;
    snprintf(ev->disconnect_line, sizeof ev->disconnect_line, "%s", scan.disconnect.line);
    snprintf(ev->reconnect_line, sizeof ev->reconnect_line, "%s", scan.reconnect.line);
    return 1;
}

static int sleep_evidence(smoke_ctx *ctx, gate_verdict *out)
{
    state_t *st = ctx->st;
    state_sleep_evidence *ev = &st->evidence.sleep;
    const state_phase_result *cp = state_phase(st, phase_get(PH_SLEEP_CHECKPOINT)->name);
    clock_reading now = clock_read(&ctx->clock);
    int64_t slept = clock_slept_ms(&ev->checkpoint, &now);
    ev->slept_ms = slept;
    if (slept >= GATE_HOST_SLEEP_MIN_MS) {
        snprintf(ev->method, sizeof ev->method, "measured");
        return 1;
    }
    if (ev->confirmed_at_ms && ev->confirmed_at_ms >= cp->at_ms) {
        snprintf(ev->method, sizeof ev->method, "operator");
        return 1;
    }
    char when[CLOCK_ISO_SZ], cmd[256], got[CLOCK_DUR_SZ];
    clock_format_iso(cp->at_ms, when);
    command_for(PH_AFTER_SLEEP, cmd, sizeof cmd);
    if (slept < 0)
        snprintf(got, sizeof got, "unknown (host rebooted?)");
    else
        clock_format_duration(slept, got);
    return close_gate_to(out, cmd, "no host sleep of 30 s or more measured since the sleep checkpoint "
                      "at %s (measured: %s) and no operator confirmation; sleep the host for "
                      "about a minute, wake it, then run: %s (if the host did sleep, confirm "
                      "it first with: %s confirm sleep-wake)",
                      when, got, cmd, ctx->self_exe[0] ? ctx->self_exe : "band-smoke");
}
