/* The rehearsal scenarios: the main job, then the negative rehearsals.
 * Each reads as the operator's checklist with the operator's actions
 * replaced by injected faults. */
#define _GNU_SOURCE /* realpath */
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "phases.h"
#include "rehearse.h"
#include "run.h"
#include "tk.h"
#include "tk_band.h"
#include "via_ctest.h"

/* Every duration below comes from rehearse.h's SDK and platform numbers,
 * scaled by rehearsal_ms; SLACK_MS covers process start-up only. */

/* An sbx fault lasting real_ms at the rehearsal's scale. */
static void inject_for(rehearsal *r, const char *why, const char *kind, int64_t real_ms)
{
    char secs[32];
    snprintf(secs, sizeof secs, "%.3f", (double)rehearsal_ms(r, real_ms) / 1000.0);
    inject_sbx(r, why, kind, secs);
}

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

/* The operator follows the cycle with `band-smoke watch`: it must say when
 * the socket dropped and when to turn Wi-Fi back on, then the reconnect
 * and the resume command, and end by itself (its deadline: the whole
 * outage, then the SDK's recovery). */
static void watch_wifi(rehearsal *r)
{
    char secs[24];
    snprintf(secs, sizeof secs, "%lld",
             (long long)((rehearsal_ms(r, WIFI_STALL_MS + RECOVER_MS) + SLACK_MS) / 1000 + 1));
    char *argv[] = {r->w.band_smoke, "watch", "--timeout", secs, NULL};
    run_out out;
    say(r, "$ band-smoke watch --timeout %s", secs);
    int status = run_child(&r->w, argv, (int)(atoi(secs) + 20) * 1000, "          | ", &out);
    check(r, status == 0, "band-smoke watch: exit %d, expected 0", status);
    static const char *const want[] = {"WebSocket disconnected at ", "after the checkpoint",
                                       "WebSocket reconnected at ", ", outage ",
                                       "resume with ctest --test-dir ", NULL};
    for (int i = 0; want[i]; i++)
        check(r, strstr(out.text, want[i]) != NULL, "band-smoke watch did not say \"%s\"",
              want[i]);
    run_out_free(&out);
}

/* Wi-Fi off as it usually is: connections stay open and nothing moves,
 * so the agent notices only by its keepalive; then Wi-Fi comes back. The
 * operator watches it with band-smoke watch. */
static void wifi_cycle(rehearsal *r)
{
    int64_t off_at = clock_wall_ms(NULL);
    inject_for(r, "Wi-Fi cycle (Wi-Fi off: every tunnel stalls, nothing is closed)", "stall",
               WIFI_STALL_MS);
    watch_wifi(r);
    wait_log(r, "the WebSocket disconnect (keepalive)", "WebSocket disconnected", off_at - 1000,
             (int)(rehearsal_ms(r, NOTICE_STALL_MS) + SLACK_MS));
    int64_t left = off_at + rehearsal_ms(r, WIFI_STALL_MS) - clock_wall_ms(NULL);
    if (left > 0)
        sleep_ms((int)left);
    say(r, "Wi-Fi is back");
    wait_log(r, "the WebSocket reconnect", "WebSocket reconnected", off_at,
             (int)(rehearsal_ms(r, RECOVER_MS) + SLACK_MS));
}

/* The abrupt variant: every connection drops at once, new ones are
 * refused at accept for the cut's length. */
static void abrupt_cut(rehearsal *r)
{
    int64_t cut_at = clock_wall_ms(NULL);
    inject_for(r, "abrupt cut (every connection dropped, new ones refused)", "net-cut",
               ABRUPT_CUT_MS);
    wait_log(r, "the WebSocket disconnect", "WebSocket disconnected", cut_at - 1000, SLACK_MS);
    wait_log(r, "the WebSocket reconnect", "WebSocket reconnected", cut_at,
             (int)(rehearsal_ms(r, ABRUPT_CUT_MS + RECOVER_MS) + SLACK_MS));
}

static void host_sleep_for(rehearsal *r, int64_t real_ms)
{
    inject_for(r, "host sleep (the sandbox's processes freeze and its tunnels stall)", "freeze",
               real_ms);
    sleep_ms((int)rehearsal_ms(r, real_ms) + 500);
    say(r, "the host is awake again; the operator confirms the sleep");
    step_smoke(r, 0, "confirm", "sleep-wake", NULL);
}

static void host_sleep(rehearsal *r)
{
    host_sleep_for(r, SHORT_SLEEP_MS);
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

/* The operator's way (README): `ctest -R phase` runs up to a checkpoint and
 * stops; after each interruption the same command goes on. */
static void scenario_main_via_ctest(rehearsal *r)
{
    if (!step_ctest_pass(r, "wifi-checkpoint", "OPERATOR STEP (Wi-Fi)"))
        return abandon(r);
    wifi_cycle(r);
    if (!step_ctest_pass(r, "sleep-checkpoint", "OPERATOR STEP (sleep/wake"))
        return abandon(r);
    host_sleep(r);
    if (!step_ctest_pass(r, "teardown", NULL))
        return abandon(r);
    check_no_leak(r);
    check_reports(r, "PASS");
    check_pass_evidence(r);
}

static void scenario_main(rehearsal *r)
{
    if (r->via_ctest)
        return scenario_main_via_ctest(r);
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

/* ---- negative rehearsals ------------------------------------------------ */

static const char *const up_to_launch[] = {"start", "preflight", "sandbox", "launch", NULL};
static const char *const up_to_wifi[] = {"start", "preflight", "sandbox", "launch", "initial",
                                         "wifi-checkpoint", NULL};

static char *evidence_text(rehearsal *r)
{
    char path[W_PATH + 16];
    snprintf(path, sizeof path, "%s/evidence.md", r->w.state_dir);
    return tk_read(path, NULL);
}

static void check_evidence_says(rehearsal *r, const char *needle)
{
    char *md = evidence_text(r);
    check(r, md && strstr(md, needle), "evidence.md does not say \"%s\"", needle);
    free(md);
}

static void check_latest(rehearsal *r, const char *label, int passed, const char *needle,
                         int attempts)
{
    state_t *st = load_state(r);
    if (!st)
        return;
    const state_probe *p = state_latest_probe(st, label);
    if (check(r, p != NULL, "no '%s' probe recorded", label)) {
        check(r, p->passed == passed, "'%s' probe %s, expected %s", label,
              p->passed ? "passed" : "failed", passed ? "pass" : "fail");
        check(r, !needle || strstr(p->detail, needle), "'%s' probe detail \"%s\" lacks \"%s\"",
              label, p->detail, needle ? needle : "");
        check(r, !attempts || state_probe_attempts(st, label) == attempts,
              "'%s' has %d attempts, expected %d", label, state_probe_attempts(st, label),
              attempts);
    }
    state_free(st);
}

/* The agent never reconnects after the cut: once the reconnect window has
 * passed, the Wi-Fi step fails on the evidence. */
static void scenario_no_reconnect(rehearsal *r)
{
    if (!run_phases(r, up_to_wifi))
        return abandon(r);
    inject_band(r, "the platform will refuse the agent's reconnects",
                "{\"action\":\"reject_agent_ws\",\"on\":true}");
    int64_t cut_at = clock_wall_ms(NULL);
    inject_for(r, "Wi-Fi cycle, and the agent will not come back", "net-cut", ABRUPT_CUT_MS);
    wait_log(r, "the WebSocket disconnect", "WebSocket disconnected", cut_at - 1000, SLACK_MS);
    step_phase(r, "after-wifi-reconnect", 77); /* inside the window: wait, do not judge */
    /* the window SMOKE_RECONNECT_WINDOW_S was set from (rehearse.c) */
    int64_t window = rehearsal_ms(r, WIFI_STALL_MS + RECOVER_MS) + SLACK_MS;
    say(r, "waiting out the reconnect window (%.1f s)", (double)window / 1000.0);
    sleep_ms((int)(window + 2000 - (clock_wall_ms(NULL) - cut_at)));
    step_phase(r, "after-wifi-reconnect", 1);
    check_latest(r, "after-wifi-reconnect", 0, "did not recover from the Wi-Fi cycle", 1);
    inject_band(r, "the platform takes agents again", "{\"action\":\"reject_agent_ws\",\"on\":false}");
    finish_run(r, 0, 0);
    check_reports(r, "FAIL");
}

/* A blip too short to drop the WebSocket: the gate names the missing
 * disconnect; a real cut afterwards passes. */
static void scenario_short_cut(rehearsal *r)
{
    if (!run_phases(r, up_to_wifi))
        return abandon(r);
    inject_for(r, "a network blip shorter than any keepalive (tunnels stall, nothing drops)",
               "stall", BLIP_MS);
    sleep_ms((int)rehearsal_ms(r, BLIP_MS) + 500);
    step_phase(r, "after-wifi-reconnect", 77);
    check_evidence_says(r, "no WebSocket disconnect since the Wi-Fi checkpoint");
    wifi_cycle(r);
    step_phase(r, "after-wifi-reconnect", 0);
    check_latest(r, "after-wifi-reconnect", 1, NULL, 1);
    step_smoke(r, 0, "record-phase", "failed", NULL); /* the rest is another scenario's */
    finish_run(r, 0, 0);
}

/* REST 500s during provisioning: first a failed room leaves nothing behind;
 * then a failed room whose agent cannot be reaped keeps the agent id, and
 * the next launch reaps it first. */
static void scenario_provision_500(rehearsal *r)
{
    static const char *const ready[] = {"start", "preflight", "sandbox", NULL};
    if (!run_phases(r, ready))
        return abandon(r);
    inject_band(r, "creating the room fails once",
                "{\"action\":\"fail_rest\",\"count\":1,\"status\":500,"
                "\"match\":\"POST /api/v1/me/chats\"}");
    step_phase(r, "launch", 1);
    int agents = -1, rooms = -1;
    tk_band_stats(&r->w.band, &agents, &rooms);
    check(r, agents == 0 && rooms == 0, "a failed launch leaked %d agents, %d rooms", agents,
          rooms);

    inject_band(r, "creating the room fails, and so does reaping the agent",
                "{\"action\":\"fail_rest\",\"count\":1,\"status\":500,"
                "\"match\":\"POST /api/v1/me/chats\"}");
    inject_band(r, "(the agent delete)",
                "{\"action\":\"fail_rest\",\"count\":1,\"status\":500,"
                "\"match\":\"DELETE /api/v1/me/agents/\"}");
    step_phase(r, "launch", 1);
    state_t *st = load_state(r);
    char kept[STATE_ID_SZ] = "";
    if (st) {
        snprintf(kept, sizeof kept, "%s", st->agent_id);
        check(r, kept[0] != '\0', "the agent that could not be reaped is not in the state");
        state_free(st);
    }
    step_phase(r, "launch", 0);
    st = load_state(r);
    if (st) {
        check(r, strcmp(st->agent_id, kept) != 0, "the next launch did not replace the kept id");
        state_free(st);
    }
    tk_band_stats(&r->w.band, &agents, &rooms);
    check(r, agents == 1 && rooms == 1, "after the retry: %d agents, %d rooms live (want 1, 1)",
          agents, rooms);
    step_phase(r, "initial", 0);
    step_smoke(r, 0, "record-phase", "failed", NULL);
    finish_run(r, 0, 0);
}

/* The Wi-Fi cycle as an abrupt cut instead of a stall; the rest as main. */
static void scenario_abrupt_cut(rehearsal *r)
{
    if (!run_phases(r, up_to_wifi))
        return abandon(r);
    abrupt_cut(r);
    if (step_phase(r, "after-wifi-reconnect", 0))
        return abandon(r);
    check_latest(r, "after-wifi-reconnect", 1, NULL, 1);
    step_smoke(r, 0, "record-phase", "failed", NULL); /* the rest is main's */
    finish_run(r, 0, 0);
}

/* A host sleep longer than the platform's heartbeat timeout: the platform
 * drops the frozen agent, which sees it on waking and reconnects; the
 * after-sleep probe passes on the new connection, and agent.log (in the
 * evidence folder) shows the drop and the reconnect after the wake. */
static void scenario_long_sleep(rehearsal *r)
{
    static const char *const up_to_sleep[] = {"start", "preflight", "sandbox", "launch",
                                              "initial", "wifi-checkpoint", NULL};
    if (!run_phases(r, up_to_sleep))
        return abandon(r);
    wifi_cycle(r);
    if (step_phase(r, "after-wifi-reconnect", 0) || step_phase(r, "sleep-checkpoint", 0))
        return abandon(r);
    long drops = tk_band_stat(&r->w.band, "heartbeat_drops");
    int64_t asleep_at = clock_wall_ms(NULL);
    host_sleep_for(r, LONG_SLEEP_MS);
    int64_t awake_at = clock_wall_ms(NULL);
    check(r, tk_band_stat(&r->w.band, "heartbeat_drops") > drops,
          "the platform did not drop the frozen agent (heartbeat timeout)");
    wait_log(r, "the disconnect seen after the wake", "WebSocket disconnected", asleep_at,
             SLACK_MS);
    wait_log(r, "the reconnect after the wake", "WebSocket reconnected", awake_at - 1000,
             (int)(rehearsal_ms(r, RECOVER_MS) + SLACK_MS));
    if (step_phase(r, "after-sleep-wake", 0))
        return abandon(r);
    check_latest(r, "after-sleep-wake", 1, NULL, 1);
    step_smoke(r, 0, "record-phase", "failed", NULL); /* the daemon restart is main's */
    finish_run(r, 0, 0);
}

/* The observer's WebSocket drops in the middle of a probe: that attempt
 * fails, a retry passes, and the report shows both. */
static void scenario_ws_drop_probe(rehearsal *r)
{
    if (!run_phases(r, up_to_launch))
        return abandon(r);
    inject_band(r, "slow REST answers so the probe is mid-flight", "{\"action\":\"delay\",\"ms\":1500}");
    char *argv[] = {r->w.band_smoke, "phase", "initial", NULL};
    say(r, "phase initial (in the background)");
    int pid = run_background(&r->w, argv);
    sleep_ms(800);
    inject_band(r, "every WebSocket drops", "{\"action\":\"drop_ws\"}");
    int status = run_reap(pid, 120000);
    check(r, status == 1, "the probe with a dropped socket exited %d, expected 1", status);
    inject_band(r, "answers at full speed again", "{\"action\":\"delay\",\"ms\":0}");
    wait_log(r, "the agent's reconnect", "WebSocket reconnected", 0,
             (int)(rehearsal_ms(r, RECOVER_MS) + SLACK_MS));
    step_phase(r, "initial", 0);
    check_latest(r, "initial", 1, NULL, 2);
    step_smoke(r, 0, "record-phase", "failed", NULL);
    finish_run(r, 0, 0);
    check_evidence_says(r, "| `initial` | PASS |");
}

/* The sandbox is gone after the host sleep (a known sbx failure). */
static void scenario_sandbox_vanish(rehearsal *r)
{
    if (!run_phases(r, up_to_wifi))
        return abandon(r);
    wifi_cycle(r);
    if (step_phase(r, "after-wifi-reconnect", 0) || step_phase(r, "sleep-checkpoint", 0))
        return abandon(r);
    inject_sbx(r, "the sandbox disappears during the sleep", "vanish", r->w.sandbox);
    host_sleep(r);
    step_phase(r, "after-sleep-wake", 1);
    check_evidence_says(r, "missing");
    say(r, "the failure ends the run: cleanup, report and teardown follow");
    finish_run(r, 0, 0);
    check_reports(r, "FAIL");
}

/* sbx hangs: the sandbox phase fails at its timeout instead of hanging. */
static void scenario_sbx_hang(rehearsal *r)
{
    static const char *const first[] = {"start", "preflight", NULL};
    if (!run_phases(r, first))
        return abandon(r);
    inject_sbx(r, "`sbx ls` hangs", "hang", "ls");
    int64_t t0 = clock_mono_ms();
    step_phase(r, "sandbox", 1);
    check(r, clock_mono_ms() - t0 < 30000, "the hung sbx took %lld ms to fail",
          (long long)(clock_mono_ms() - t0));
    inject_sbx(r, "`sbx ls` answers again", "hang", "off");
    step_smoke(r, 0, "record-phase", "failed", NULL);
    finish_run(r, 0, 0);
}

/* Production endpoints: preflight fails and nothing is touched. */
static void scenario_production(rehearsal *r)
{
    step_phase(r, "start", 0);
    step_phase(r, "preflight", 1);
    step_phase(r, "sandbox", 77);
    step_phase(r, "launch", 77);
    check(r, tk_band_stat(&r->w.band, "rest_calls") == 0, "a request reached Band");
    char *ls[] = {r->w.sbx_bin, "ls", "-q", NULL};
    run_out out;
    run_child(&r->w, ls, 20000, NULL, &out);
    check(r, strstr(out.text, r->w.sandbox) == NULL, "a sandbox was created");
    run_out_free(&out);
    step_smoke(r, 0, "record-phase", "failed", NULL);
    step_phase(r, "cleanup", 0);
}

/* A corrupt state.json: a clear error naming the file, and the file is
 * left exactly as it was. */
static void scenario_corrupt_state(rehearsal *r)
{
    step_phase(r, "start", 0);
    char path[W_PATH + 16];
    snprintf(path, sizeof path, "%s/state.json", r->w.state_dir);
    const char *junk = "{\"schema_version\": 1, \"run_id\": \"deadbeef\", \"probes\": [tru";
    tk_write(path, junk);
    say(r, "INJECT a truncated state.json");
    step_phase(r, "preflight", 1);
    step_smoke(r, 1, "status", NULL, NULL);
    step_smoke(r, 1, "record-phase", "failed", NULL);
    char *now = tk_read(path, NULL);
    check(r, now && strcmp(now, junk) == 0, "state.json was changed");
    free(now);
}

/* `record-phase failed` in the middle of a run: the report says FAIL and
 * cleanup still reaps everything. */
static void scenario_record_failed(rehearsal *r)
{
    static const char *const some[] = {"start", "preflight", "sandbox", "launch", "initial",
                                       NULL};
    if (!run_phases(r, some))
        return abandon(r);
    step_smoke(r, 0, "record-phase", "failed", NULL);
    step_phase(r, "wifi-checkpoint", 77);
    finish_run(r, 0, 0);
    check_reports(r, "FAIL");
}

/* band-smoke killed with SIGKILL at random points: the state still reads,
 * and the same step run again continues the run; cleanup still works. */
static void scenario_sigkill(rehearsal *r)
{
    static const char *const phases[] = {"start", "preflight", "sandbox", "launch", "initial",
                                         "wifi-checkpoint", NULL};
    unsigned seed = (unsigned)clock_wall_ms(NULL);
    for (int i = 0; phases[i]; i++) {
        for (int round = 0; round < 2; round++) {
            char *argv[] = {r->w.band_smoke, "phase", (char *)phases[i], NULL};
            int after = 5 + (int)(rand_r(&seed) % 400);
            int pid = run_background(&r->w, argv);
            sleep_ms(after);
            say(r, "INJECT SIGKILL to band-smoke phase %s after %d ms", phases[i], after);
            kill(pid, SIGKILL);
            run_reap(pid, 60000);
            step_smoke(r, 0, "status", NULL, NULL);
        }
        if (step_phase(r, phases[i], 0) != 0)
            return abandon(r);
    }
    step_smoke(r, 0, "record-phase", "failed", NULL);
    finish_run(r, 0, 0);
}

/* Running processes whose executable is `exe` and whose argv[1] is `arg1`
 * (NULL = any). Linux /proc: tests only. */
static int count_procs(const char *exe, const char *arg1)
{
    char want[PATH_MAX];
    if (!realpath(exe, want))
        return -1;
    int n = 0;
    DIR *d = opendir("/proc");
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        if (!scan_proc_runs(e->d_name, want))
            continue;
        char path[300], argv[512];
        snprintf(path, sizeof path, "/proc/%.32s/cmdline", e->d_name);
        FILE *fp = fopen(path, "rb");
        size_t got_n = fp ? fread(argv, 1, sizeof argv - 1, fp) : 0;
        if (fp)
            fclose(fp);
        argv[got_n] = '\0';
        const char *first = argv + strlen(argv) + 1;
        n += !arg1 || (first < argv + got_n && !strcmp(first, arg1));
    }
    if (d)
        closedir(d);
    return n;
}

static int wait_procs(const char *exe, const char *arg1, int want_some, int timeout_ms)
{
    int64_t deadline = clock_mono_ms() + timeout_ms;
    for (;;) {
        int n = count_procs(exe, arg1);
        if ((want_some && n > 0) || (!want_some && n == 0) || clock_mono_ms() >= deadline)
            return n;
        sleep_ms(20);
    }
}

/* Ctrl-C as a terminal sends it to `ctest -R phase`: SIGINT to ctest's
 * whole process group, band-smoke under it included, while the sandbox
 * phase waits on a hung `sbx ls`. ctest dies of it; band-smoke records the
 * phase as interrupted and ends the hung child's group, so nothing stays. */
static void ctrl_c_through_ctest(rehearsal *r)
{
    if (via_ctest_open(r) != 0)
        return;
    int pid = via_ctest_start(r, "phase");
    check(r, wait_procs(r->w.sbx_bin, "ls", 1, 20000) > 0, "no hung `sbx ls` under ctest");
    sleep_ms(300);
    say(r, "INJECT Ctrl-C: SIGINT to ctest's process group (pid %d)", pid);
    int64_t t0 = clock_mono_ms();
    kill(-pid, SIGINT);
    int status = run_reap(pid, 20000);
    int64_t took = clock_mono_ms() - t0;
    say(r, "ctest ended %lld ms after SIGINT, status %d", (long long)took, status);
    check(r, status == 130 && took < 5000, "ctest: status %d %lld ms after SIGINT", status,
          (long long)took);
    int left = wait_procs(r->w.sbx_bin, "ls", 0, 3000);
    check(r, left == 0, "%d `sbx ls` process(es) outlived the Ctrl-C of ctest", left);
    state_t *st = load_state(r);
    const state_phase_result *res = st ? state_phase(st, "sandbox") : NULL;
    check(r, res && res->status != RESULT_PASSED && strstr(res->detail, "interrupted by SIGINT"),
          "under ctest the sandbox phase is recorded as '%s'", res ? res->detail : "(nothing)");
    state_free(st);
}

/* Ctrl-C during a phase (issue 11): `band-smoke phase sandbox` while
 * `sbx ls` hangs gets SIGINT, as a terminal's Ctrl-C would send it. The
 * hung sbx (its own process group, out of the terminal's reach) must die
 * with the phase; the phase is recorded as interrupted in a state that
 * still reads; band-smoke exits 130; and the run goes on and is cleaned up
 * with nothing leaked. */
static void scenario_ctrl_c(rehearsal *r)
{
    static const char *const first[] = {"start", "preflight", NULL};
    if (!run_phases(r, first))
        return abandon(r);
    inject_sbx(r, "`sbx ls` hangs", "hang", "ls");
    char *argv[] = {r->w.band_smoke, "phase", "sandbox", NULL};
    say(r, "phase sandbox, in the background");
    int pid = run_background(&r->w, argv);
    int hung = wait_procs(r->w.sbx_bin, "ls", 1, 20000);
    check(r, hung > 0, "no hung `sbx ls` appeared");
    sleep_ms(300);
    say(r, "INJECT Ctrl-C: SIGINT to band-smoke phase sandbox (pid %d)", pid);
    int64_t t0 = clock_mono_ms();
    kill(pid, SIGINT);
    int status = run_reap(pid, 20000);
    int64_t took = clock_mono_ms() - t0;
    say(r, "band-smoke phase sandbox ended %lld ms after SIGINT, exit %d", (long long)took,
        status);
    check(r, status == 130, "band-smoke exit %d after SIGINT, expected 130", status);
    check(r, took < 5000, "band-smoke took %lld ms to stop", (long long)took);
    int left = wait_procs(r->w.sbx_bin, "ls", 0, 1000);
    check(r, left == 0, "%d `sbx ls` process(es) outlived the interrupted phase", left);
    check(r, count_procs(r->w.band_smoke, "_launcher") == 0, "a launcher is running");
    state_t *st = load_state(r);
    const state_phase_result *res = st ? state_phase(st, "sandbox") : NULL;
    check(r, res && res->status != RESULT_PASSED && strstr(res->detail, "interrupted by SIGINT"),
          "the sandbox phase is recorded as '%s'", res ? res->detail : "(nothing)");
    state_free(st);
    step_smoke(r, 0, "status", NULL, NULL);
    ctrl_c_through_ctest(r);
    inject_sbx(r, "`sbx ls` answers again", "hang", "off");
    static const char *const rest[] = {"sandbox", "launch", NULL};
    if (!run_phases(r, rest))
        return abandon(r);
    /* Again in the probe's wait: a frozen sandbox never answers. */
    inject_sbx(r, "the sandbox freezes, so the probe waits", "freeze", "4");
    char *probe[] = {r->w.band_smoke, "phase", "initial", NULL};
    pid = run_background(&r->w, probe);
    sleep_ms(1500);
    say(r, "INJECT Ctrl-C: SIGINT to band-smoke phase initial (pid %d)", pid);
    t0 = clock_mono_ms();
    kill(pid, SIGINT);
    status = run_reap(pid, 20000);
    took = clock_mono_ms() - t0;
    check(r, status == 130 && took < 5000, "phase initial: exit %d %lld ms after SIGINT",
          status, (long long)took);
    st = load_state(r);
    res = st ? state_phase(st, "initial") : NULL;
    check(r, res && res->status != RESULT_PASSED && strstr(res->detail, "interrupted by SIGINT"),
          "the initial probe is recorded as '%s'", res ? res->detail : "(nothing)");
    state_free(st);
    sleep_ms(3000); /* the sandbox wakes up */
    step_phase(r, "initial", 0);
    step_smoke(r, 0, "record-phase", "failed", NULL);
    finish_run(r, 0, 0);
}

/* ---- abandon through ctest --------------------------------------------- */

static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *at = strstr(text, needle); at; at = strstr(at + 1, needle))
        n++;
    return n;
}

/* What one `ctest -R phase` pass (via_ctest.h: step_ctest) said of a
 * phase: 0 passed, 77 skipped, 1 failed, -1 not run. */
static int ctest_status(const int status[PH__COUNT], const char *phase)
{
    const phase_def *d = phase_find(phase);
    return d ? status[d->id] : -1;
}

/* The pass ended the run it found (`run_id`, agent `generation`): failed,
 * cleaned up, torn down, FAIL; no new run, no relaunch, nothing live. */
static void check_ended_in_place(rehearsal *r, const int status[PH__COUNT], const char *run_id,
                                 int generation)
{
    static const char *const ran[] = {"cleanup", "report", "teardown", NULL};
    for (int i = 0; ran[i]; i++)
        check(r, ctest_status(status, ran[i]) == 0, "phase %s did not pass", ran[i]);
    state_t *st = load_state(r);
    if (st) {
        check(r, strcmp(st->run_id, run_id) == 0, "the pass began run %s; the run was %s",
              st->run_id, run_id);
        check(r, st->agent_process.generation == generation, "the agent was relaunched "
              "(generation %d, was %d)", st->agent_process.generation, generation);
        check(r, st->phase == RUN_FAILED, "the run ended %s, expected failed",
              state_run_phase_name(st->phase));
        const state_phase_result *td = state_phase(st, "teardown");
        check(r, td && td->status == RESULT_PASSED, "teardown did not run on that run");
        check(r, !st->room_id[0] && !st->agent_id[0], "ids left unreaped");
        state_free(st);
    }
    char archive[W_PATH + 32];
    snprintf(archive, sizeof archive, "%s/state.%s.json", r->w.state_dir, run_id);
    check(r, access(archive, F_OK) != 0, "run %s was archived: a new run began", run_id);
    int agents = -1, rooms = -1;
    tk_band_stats(&r->w.band, &agents, &rooms);
    say(r, "fake Band: %d live agents, %d live rooms", agents, rooms);
    check(r, agents == 0 && rooms == 0, "left live: %d agents, %d rooms", agents, rooms);
    check_reports(r, "FAIL");
}

static int current_run(rehearsal *r, char *run_id, size_t cap, int *generation)
{
    state_t *st = load_state(r);
    if (!st)
        return 0;
    snprintf(run_id, cap, "%s", st->run_id);
    *generation = st->agent_process.generation;
    state_free(st);
    return 1;
}

/* README's abandon: at the Wi-Fi checkpoint the operator gives up with
 * `record-phase failed`, then runs `ctest -R phase` as always. That pass
 * must clean up, report and tear down this very run, render FAIL, and
 * provision nothing. */
static void scenario_abandon_through_ctest(rehearsal *r)
{
    char run_id[16];
    int generation;
    if (!run_phases(r, up_to_wifi) || !current_run(r, run_id, sizeof run_id, &generation))
        return abandon(r);
    say(r, "the operator gives the run up at the Wi-Fi checkpoint");
    step_smoke(r, 0, "record-phase", "failed", NULL);
    int status[PH__COUNT];
    if (via_ctest_open(r) != 0)
        return;
    int rc = step_ctest(r, "phase", status, NULL);
    check(r, rc == 0, "ctest -R phase exit %d, expected 0", rc);
    check(r, ctest_status(status, "start") == 77, "phase.01.start was not skipped (a new run?)");
    check_ended_in_place(r, status, run_id, generation);
}

/* Once the agent runs, a failure ends the run in the same `ctest -R phase`
 * pass: the failed probe, the rest skipped, then cleanup, report and
 * teardown of that run. */
static void scenario_fail_through_ctest(rehearsal *r)
{
    char run_id[16];
    int generation;
    if (!run_phases(r, up_to_launch) || !current_run(r, run_id, sizeof run_id, &generation))
        return abandon(r);
    inject_band(r, "every message the user side sends fails",
                "{\"action\":\"fail_rest\",\"count\":1000,\"status\":500,"
                "\"match\":\"POST /api/v1/me/chats/\"}");
    int status[PH__COUNT];
    char *text = NULL;
    if (via_ctest_open(r) != 0)
        return;
    int rc = step_ctest(r, "phase", status, &text);
    check(r, rc != 0, "ctest -R phase exit 0 with a failed probe");
    check(r, ctest_status(status, "initial") == 1, "phase.05.initial did not fail");
    check(r, ctest_status(status, "wifi-checkpoint") == 77,
          "phase.06.wifi-checkpoint was not skipped");
    /* --output-on-failure printed the failed phase's lines; the story at
     * the end points at them rather than print them again. */
    check(r, text && strstr(text, "phase.05.initial (Initial probe): FAILED; its lines "
                                  "are above, where ctest printed them"),
          "the story at the end does not point at phase.05.initial's lines");
    check(r, text && count_of(text, "probe initial: sending a marker") == 1,
          "phase.05.initial's lines are not on screen exactly once");
    check_ended_in_place(r, status, run_id, generation);
    free(text);
}

const scenario scenarios[] = {
    /* band-smoke watch follows the whole outage, so a loaded machine's slow
     * reconnect must not outlast the 5 s window meant for no-reconnect. */
    {.name = "main", .run = scenario_main, .e2e_timeout_s = 20,
     .what = "the whole smoke, phases 01-13, with the three interruptions injected"},
    {.name = "plain-http", .run = scenario_main, .e2e_timeout_s = 20, .plain_http = 1,
     .what = "the main rehearsal with the fake Band on plain http/ws instead of https/wss"},
    {.name = "no-reconnect", .run = scenario_no_reconnect,
     .what = "the agent never reconnects after the Wi-Fi cut: Wi-Fi step FAIL"},
    {.name = "abrupt-cut", .run = scenario_abrupt_cut, .e2e_timeout_s = 20,
     .what = "the Wi-Fi cycle as an abrupt cut (every connection dropped at once): PASS"},
    {.name = "long-sleep", .run = scenario_long_sleep, .e2e_timeout_s = 20,
     .what = "a host sleep longer than the platform's heartbeat timeout: dropped, reconnects"},
    {.name = "daemon-kill", .run = scenario_main, .e2e_timeout_s = 20,
     .env = "FAKE_SBX_STOP_KILL=1",
     .what = "the main rehearsal with a daemon stop that SIGKILLs the sandbox's processes"},
    {.name = "short-cut", .run = scenario_short_cut,
     .what = "a blip too short to drop the socket: SKIPPED naming it; a real cut passes"},
    {.name = "provision-500", .run = scenario_provision_500,
     .what = "REST 500s while provisioning: launch FAIL, nothing leaked, kept ids reaped next"},
    {.name = "ws-drop-probe", .run = scenario_ws_drop_probe,
     .what = "the WebSocket drops mid-probe: FAIL, then a retry passes"},
    {.name = "sandbox-vanish", .run = scenario_sandbox_vanish,
     .what = "the sandbox is missing after the sleep: FAIL with that finding"},
    {.name = "sbx-hang", .run = scenario_sbx_hang, .env = "SMOKE_SBX_TIMEOUT_S=3",
     .what = "sbx hangs: the sandbox phase fails at its timeout"},
    {.name = "production", .run = scenario_production, .production = 1,
     .what = "production endpoints: preflight FAIL, nothing touched"},
    {.name = "corrupt-state", .run = scenario_corrupt_state,
     .what = "a corrupt state.json: a clear error, the file untouched"},
    {.name = "record-failed", .run = scenario_record_failed,
     .what = "record-phase failed mid-run: the report says FAIL"},
    {.name = "abandon-through-ctest", .run = scenario_abandon_through_ctest,
     .what = "record-phase failed at the Wi-Fi checkpoint, then ctest -R phase: that run "
             "is cleaned up, FAIL, nothing provisioned"},
    {.name = "fail-through-ctest", .run = scenario_fail_through_ctest,
     .what = "the initial probe fails inside ctest -R phase: cleanup, report, teardown of "
             "that run follow in the same pass, FAIL"},
    {.name = "sigkill", .run = scenario_sigkill,
     .what = "band-smoke killed with SIGKILL at random points: state reads, the run goes on"},
    {.name = "ctrl-c", .run = scenario_ctrl_c,
     .what = "Ctrl-C while sbx hangs, to band-smoke and to `ctest -R phase`: the sbx child dies, "
             "the phase reads interrupted, exit 130"},
    {.name = NULL},
};
