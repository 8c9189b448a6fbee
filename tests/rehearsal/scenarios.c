/* The rehearsal scenarios: the main job, then the negative rehearsals.
 * Each reads as the operator's checklist with the operator's actions
 * replaced by injected faults. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "rehearse.h"

/* The Wi-Fi cycle: long enough for every tunnel to drop and the agent to
 * back off at least once; short enough for a 60 s rehearsal. */
#define WIFI_CUT_S "3"
#define SLEEP_S 3

static int run_phases(rehearsal *r, const char *const *phases)
{
    for (int i = 0; phases[i]; i++)
        if (step_phase(r, phases[i], 0) != 0)
            return 0;
    return 1;
}

/* A run that cannot go on is marked failed, then cleaned up like any other:
 * nothing may leak because a rehearsal stopped early. */
static void abandon(rehearsal *r)
{
    say(r, "the run cannot go on: marking it failed and cleaning up");
    step_smoke(r, 0, "record-phase", "failed", NULL);
    finish_run(r, 0, 0);
}

static void wifi_cycle(rehearsal *r)
{
    int64_t cut_at = clock_wall_ms(NULL);
    inject_sbx(r, "Wi-Fi cycle (the operator turns Wi-Fi off, then on)", "net-cut", WIFI_CUT_S);
    wait_log(r, "the WebSocket disconnect", "WebSocket disconnected", cut_at - 1000, 20000);
    wait_log(r, "the WebSocket reconnect", "WebSocket reconnected", cut_at, 40000);
}

static void host_sleep(rehearsal *r)
{
    char secs[8];
    snprintf(secs, sizeof secs, "%d", SLEEP_S);
    inject_sbx(r, "host sleep (the sandbox's processes freeze and its tunnels stall)", "freeze",
               secs);
    sleep_ms(SLEEP_S * 1000 + 500);
    say(r, "the host is awake again; the operator confirms the sleep");
    step_smoke(r, 0, "confirm", "sleep-wake", NULL);
}

static void report_numbers(rehearsal *r, const state_t *st)
{
    const state_evidence *ev = &st->evidence;
    char outage[CLOCK_DUR_SZ], recovery[CLOCK_DUR_SZ];
    clock_format_duration(ev->wifi.reconnect_at_ms - ev->wifi.disconnect_at_ms, outage);
    clock_format_duration(ev->daemon_restart.recovery_ms, recovery);
    say(r, "measured: Wi-Fi outage (disconnect to reconnect) %s; daemon restart recovery %s",
        outage, recovery);
    for (int i = 0; i < STATE_MANDATORY_PROBES; i++) {
        const state_probe *p = state_latest_probe(st, state_mandatory_probes[i]);
        if (p)
            say(r, "probe %-22s %s in %lld ms", p->label, p->passed ? "PASS" : "FAIL",
                (long long)p->latency_ms);
    }
}

static void check_pass_evidence(rehearsal *r)
{
    state_t *st = load_state(r);
    if (!st)
        return;
    check(r, state_verdict_of(st) == VERDICT_PASS, "verdict %s, expected PASS",
          state_verdict_name(state_verdict_of(st)));
    for (int i = 0; i < STATE_MANDATORY_PROBES; i++) {
        const state_probe *p = state_latest_probe(st, state_mandatory_probes[i]);
        check(r, p && p->passed, "probe %s did not pass", state_mandatory_probes[i]);
    }
    const state_evidence *ev = &st->evidence;
    check(r, ev->wifi.disconnect_at_ms && ev->wifi.reconnect_at_ms > ev->wifi.disconnect_at_ms,
          "no measured Wi-Fi outage");
    check(r, !strcmp(ev->sleep.method, "operator"), "sleep known by '%s', expected operator",
          ev->sleep.method);
    check(r, !strcmp(ev->daemon_restart.sandbox_status, "stopped"),
          "sandbox after daemon restart: '%s'", ev->daemon_restart.sandbox_status);
    check(r, ev->daemon_restart.agent_exit[0] != '\0', "old agent's end not recorded");
    check(r, ev->daemon_restart.recovery_ms > 0, "daemon restart recovery not measured");
    check(r, st->room_id[0] == '\0' && st->agent_id[0] == '\0', "ids left unreaped");
    report_numbers(r, st);
    state_free(st);
}

static void scenario_main(rehearsal *r)
{
    static const char *const up_to_initial[] = {"start", "preflight", "sandbox", "launch",
                                                "initial", "wifi-checkpoint", NULL};
    if (!run_phases(r, up_to_initial))
        return abandon(r);
    wifi_cycle(r);
    if (step_phase(r, "after-wifi-reconnect", 0) || step_phase(r, "sleep-checkpoint", 0))
        return abandon(r);
    host_sleep(r);
    if (step_phase(r, "after-sleep-wake", 0) || step_phase(r, "daemon-restart", 0))
        return abandon(r);
    finish_run(r, 0, 0);
    check_reports(r, "PASS");
    check_pass_evidence(r);
}

const scenario scenarios[] = {
    {"main", "the whole smoke, phases 01-13, with the three interruptions injected", 20,
     scenario_main},
    {NULL, NULL, 0, NULL},
};
