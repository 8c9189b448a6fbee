/* reports: evidence.md and junit.xml match their golden files byte for
 * byte, the XML is valid against tests/data/junit.xsd, hostile text cannot
 * break either format, secrets never reach them, and report_write replaces
 * both files atomically with mode 0600.
 *
 * UPDATE_GOLDEN=1 rewrites the files in tests/data/reports from the current rendering
 * instead of comparing; review the diff before committing it. */
#include "evidence.h"
#include "junit.h"
#include "redact.h"
#include "report.h"
#include "state.h"
#include "textbuf.h"
#include "tk.h"
#include "tk_run.h"
#include "unit.h"

#include <cJSON.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define T0 1796205600000LL /* 2026-12-02T10:00:00Z */
#define SEC 1000LL
#define SUITE_VERSION "0.1.0"
#define CANARY "canary-7f3a9c2e5b1d"
/* A secret made of characters both formats escape: only redaction before
 * escaping can catch it. */
#define CANARY_SPECIAL "k3y&<sec|ret>_*x"

/* The suite's table, as the top-level CMakeLists registers the phases. */
static const report_phase phases[] = {
    {"start", "phase.01.start", "Start the run", NULL},
    {"preflight", "phase.02.preflight", "Preflight", NULL},
    {"sandbox", "phase.03.sandbox", "Sandbox", NULL},
    {"launch", "phase.04.launch", "Launch the agent", NULL},
    {"initial", "phase.05.initial", "Initial probe", "initial"},
    {"wifi-checkpoint", "phase.06.wifi-checkpoint", "Wi-Fi checkpoint", NULL},
    {"after-wifi-reconnect", "phase.07.after-wifi-reconnect", "Probe after Wi-Fi reconnect",
     "after-wifi-reconnect"},
    {"sleep-checkpoint", "phase.08.sleep-checkpoint", "Sleep checkpoint", NULL},
    {"after-sleep-wake", "phase.09.after-sleep-wake", "Probe after sleep/wake",
     "after-sleep-wake"},
    {"daemon-restart", "phase.10.daemon-restart", "Daemon restart", "after-daemon-restart"},
    {"cleanup", "phase.11.cleanup", "Cleanup", NULL},
    {"report", "phase.12.report", "Report", NULL},
    {"teardown", "phase.13.teardown", "Teardown", NULL},
};
#define NPHASES (sizeof phases / sizeof phases[0])

/* ---- building states ------------------------------------------------------ */

/* Copies as much of src as fits: hostile text is meant to be cut, even in
 * the middle of a UTF-8 sequence. */
static void fill(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src) < cap - 1 ? strlen(src) : cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}
#define FILL(field, text) fill((field), sizeof(field), (text))

static state_t *new_run(const char *run_id)
{
    state_t *st = state_new(NULL);
    if (!st)
        abort();
    FILL(st->run_id, run_id);
    st->started_at_ms = T0;
    st->updated_at_ms = T0;
    return st;
}

static void set_phase(state_t *st, const char *name, state_result r, int64_t at,
                      int64_t took, const char *detail)
{
    UNIT_CHECK(state_set_phase(st, name, r, at, took, detail) == ERR_OK,
               "state_set_phase %s refused", name);
}

static void add_probe(state_t *st, const char *label, int passed, int64_t at,
                      int64_t latency, const char *marker, int generation, const char *detail)
{
    state_probe p;
    memset(&p, 0, sizeof p);
    FILL(p.label, label);
    FILL(p.marker, marker);
    FILL(p.detail, detail);
    p.passed = passed;
    p.at_ms = at;
    p.latency_ms = latency;
    p.generation = generation;
    UNIT_CHECK(state_add_probe(st, &p) == ERR_OK, "state_add_probe %s refused", label);
}

static void set_environment(state_t *st)
{
    snprintf(st->sandbox_name, sizeof st->sandbox_name, "band-smoke-e2e");
    snprintf(st->workspace, sizeof st->workspace, "/home/operator/smoke_workspace");
    snprintf(st->sbx_version, sizeof st->sbx_version, "v0.9.1");
    snprintf(st->sdk_version, sizeof st->sdk_version, "6.0.0");
    snprintf(st->agent_name, sizeof st->agent_name, "sandbox-smoke-%s", st->run_id);
}

/* Phases 01 to 06 passed and the initial probe with them. */
static void run_to_wifi_checkpoint(state_t *st)
{
    set_environment(st);
    snprintf(st->room_id, sizeof st->room_id, "room-5c1e0a77");
    snprintf(st->agent_id, sizeof st->agent_id, "agent-9d2b44f0");
    set_phase(st, "start", RESULT_PASSED, T0, 150, "run started");
    set_phase(st, "preflight", RESULT_PASSED, T0 + 1 * SEC, 2300, "9 checks passed");
    set_phase(st, "sandbox", RESULT_PASSED, T0 + 5 * SEC, 41200,
              "reused sandbox band-smoke-e2e; payload copied");
    set_phase(st, "launch", RESULT_PASSED, T0 + 50 * SEC, 12400,
              "agent ready (launch generation 1)");
    st->agent_process.generation = 1;
    st->agent_process.launched_at_ms = T0 + 50 * SEC;
    st->agent_process.ready_at_ms = T0 + 61 * SEC;
    set_phase(st, "initial", RESULT_PASSED, T0 + 65 * SEC, 1800, "");
    add_probe(st, "initial", 1, T0 + 66500, 812, "a1b2c3d4e5f6", 1,
              "reply sandbox-ack:a1b2c3d4e5f6 received");
    set_phase(st, "wifi-checkpoint", RESULT_PASSED, T0 + 70 * SEC, 40,
              "awaiting-wifi-recovery recorded");
    st->phase = RUN_AWAITING_WIFI;
    st->updated_at_ms = T0 + 70 * SEC;
}

static state_t *empty_run(void)
{
    return new_run("0badc0de");
}

static state_t *incomplete_run(void)
{
    state_t *st = new_run("5e7a1b90");
    run_to_wifi_checkpoint(st);
    const char *wait = "the run waits at the Wi-Fi checkpoint: cycle Wi-Fi, then resume";
    set_phase(st, "after-wifi-reconnect", RESULT_SKIPPED, T0 + 71 * SEC, 5, wait);
    set_phase(st, "sleep-checkpoint", RESULT_SKIPPED, T0 + 71 * SEC, 3, wait);
    set_phase(st, "after-sleep-wake", RESULT_SKIPPED, T0 + 71 * SEC, 3, wait);
    set_phase(st, "daemon-restart", RESULT_SKIPPED, T0 + 71 * SEC, 3, wait);
    set_phase(st, "cleanup", RESULT_SKIPPED, T0 + 71 * SEC, 3, wait);
    set_phase(st, "report", RESULT_PASSED, T0 + 71 * SEC, 20, "");
    set_phase(st, "teardown", RESULT_SKIPPED, T0 + 72 * SEC, 4,
              "cleanup has not passed and the run has not failed");
    return st;
}

static state_t *pass_run(void)
{
    state_t *st = new_run("3f2a9c1e");
    run_to_wifi_checkpoint(st);
    state_wifi_evidence *w = &st->evidence.wifi;
    w->disconnect_at_ms = T0 + 95 * SEC;
    w->reconnect_at_ms = T0 + 143500;
    w->generation = 1;
    snprintf(w->disconnect_line, sizeof w->disconnect_line,
             "2026-12-02 10:01:35,000 WARNING band.runtime: WebSocket disconnected");
    snprintf(w->reconnect_line, sizeof w->reconnect_line,
             "2026-12-02 10:02:23,500 INFO band.runtime: WebSocket reconnected");
    set_phase(st, "after-wifi-reconnect", RESULT_PASSED, T0 + 180 * SEC, 2100, "");
    add_probe(st, "after-wifi-reconnect", 1, T0 + 181900, 955, "b2c3d4e5f6a1", 1,
              "reply received");
    set_phase(st, "sleep-checkpoint", RESULT_PASSED, T0 + 200 * SEC, 35,
              "awaiting-sleep-wake recorded");
    state_sleep_evidence *s = &st->evidence.sleep;
    s->checkpoint = (clock_reading){T0 + 200010, 3600000, 3700000};
    s->slept_ms = 65000;
    snprintf(s->method, sizeof s->method, "measured");
    snprintf(s->sandbox_status, sizeof s->sandbox_status, "running");
    set_phase(st, "after-sleep-wake", RESULT_PASSED, T0 + 330 * SEC, 2500, "");
    add_probe(st, "after-sleep-wake", 1, T0 + 332400, 1204, "c3d4e5f6a1b2", 1,
              "reply received");
    state_set_residual(st, "sleep_wake",
                       "VM and agent survived; the WebSocket reconnected 4 s after wake");
    state_daemon_evidence *d = &st->evidence.daemon_restart;
    d->stop_at_ms = T0 + 401 * SEC;
    d->start_at_ms = T0 + 404 * SEC;
    snprintf(d->sandbox_status, sizeof d->sandbox_status, "stopped");
    snprintf(d->agent_exit, sizeof d->agent_exit, "exited with status 137");
    d->ready_at_ms = T0 + 470 * SEC;
    d->recovery_ms = 88 * SEC;
    st->agent_process.generation = 2;
    set_phase(st, "daemon-restart", RESULT_PASSED, T0 + 400 * SEC, 95 * SEC,
              "agent relaunched (generation 2)");
    add_probe(st, "after-daemon-restart", 1, T0 + 489 * SEC, 1010, "d4e5f6a1b2c3", 2,
              "reply received");
    state_set_residual(st, "daemon_restart",
                       "the agent died with the daemon; recovery was a full re-provision");
    set_phase(st, "cleanup", RESULT_PASSED, T0 + 500 * SEC, 1500, "room and agent reaped");
    st->room_id[0] = st->agent_id[0] = '\0';
    st->phase = RUN_COMPLETED;
    set_phase(st, "report", RESULT_PASSED, T0 + 502 * SEC, 20, "");
    set_phase(st, "teardown", RESULT_PASSED, T0 + 503 * SEC, 3000,
              "sandbox removed; workspace deleted");
    st->updated_at_ms = T0 + 506 * SEC;
    return st;
}

/* initial failed then passed on retry; after-wifi-reconnect failed twice;
 * then the operator recorded the run as failed and cleanup kept the room. */
static state_t *fail_run(void)
{
    state_t *st = new_run("c0ffee42");
    set_environment(st);
    snprintf(st->room_id, sizeof st->room_id, "room-77aa0b13");
    snprintf(st->carried_from, sizeof st->carried_from, "9e8d7c6b");
    set_phase(st, "start", RESULT_PASSED, T0, 120, "run started");
    set_phase(st, "preflight", RESULT_PASSED, T0 + 1 * SEC, 2200, "9 checks passed");
    set_phase(st, "sandbox", RESULT_PASSED, T0 + 4 * SEC, 30 * SEC, "created sandbox");
    set_phase(st, "launch", RESULT_PASSED, T0 + 40 * SEC, 11 * SEC, "agent ready");
    add_probe(st, "initial", 0, T0 + 66 * SEC, -1, "0f1e2d3c4b5a", 1,
              "no sandbox-ack within 120 s");
    set_phase(st, "initial", RESULT_PASSED, T0 + 200 * SEC, 2 * SEC, "");
    add_probe(st, "initial", 1, T0 + 201 * SEC, 640, "1a2b3c4d5e6f", 1, "reply received");
    set_phase(st, "wifi-checkpoint", RESULT_PASSED, T0 + 210 * SEC, 30, "");
    st->evidence.wifi.disconnect_at_ms = T0 + 230 * SEC;
    st->evidence.wifi.generation = 1;
    add_probe(st, "after-wifi-reconnect", 0, T0 + 300 * SEC, -1, "2b3c4d5e6f70", 1,
              "no sandbox-ack within 120 s");
    add_probe(st, "after-wifi-reconnect", 0, T0 + 500 * SEC, 15 * SEC, "3c4d5e6f7081", 1,
              "HTTP 502 from the staging REST API");
    set_phase(st, "after-wifi-reconnect", RESULT_FAILED, T0 + 499 * SEC, 16 * SEC,
              "probe after-wifi-reconnect failed: HTTP 502 from the staging REST API");
    state_set_phase_output(st, "after-wifi-reconnect",
                           "== phase.07.after-wifi-reconnect: After Wi-Fi reconnect (run c0ffee42)\n"
                           "probe after-wifi-reconnect: sending marker 3c4d5e6f7081\n"
                           "FAIL POST /api/v1/me/chats/room-77aa0b13/messages: HTTP 502\n");
    set_phase(st, "cleanup", RESULT_FAILED, T0 + 600 * SEC, 4 * SEC,
              "room reap failed (HTTP 500); its id is kept");
    state_set_phase_diagnostics(st, "after-wifi-reconnect", "diagnostics.after-wifi-reconnect.txt");
    state_set_phase_output(st, "cleanup",
                           "== phase.11.cleanup: Cleanup (run c0ffee42)\n"
                           "reaping room room-77aa0b13: DELETE /api/v1/me/chats/room-77aa0b13: "
                           "HTTP 500 internal_error\n");
    st->phase = RUN_FAILED;
    st->updated_at_ms = T0 + 604 * SEC;
    return st;
}

static report_input input_for(const state_t *st, int64_t now)
{
    return (report_input){st, phases, NPHASES, SUITE_VERSION, now};
}

/* ---- checks ------------------------------------------------------------------- */

static size_t count(const char *text, const char *needle)
{
    size_t n = 0, len = strlen(needle);
    for (const char *p = strstr(text, needle); p; p = strstr(p + len, needle))
        n++;
    return n;
}

static size_t count_between(const char *from, const char *to, const char *needle)
{
    size_t n = 0, len = strlen(needle);
    for (const char *p = strstr(from, needle); p && p < to; p = strstr(p + len, needle))
        n++;
    return n;
}

static int line_of_first_difference(const char *a, const char *b)
{
    int line = 1;
    for (; *a && *a == *b; a++, b++)
        line += *a == '\n';
    return line;
}

static void check_golden(const char *file, const char *got)
{
    char *path = tk_path(SMOKE_TEST_DATA "/reports", file);
    const char *update = getenv("UPDATE_GOLDEN");
    if (update && strcmp(update, "1") == 0) {
        tk_write(path, got);
        fprintf(stderr, "rewrote %s\n", path);
    } else {
        char *want = tk_read(path, NULL);
        if (UNIT_CHECK(want != NULL, "%s is missing; UPDATE_GOLDEN=1 writes it", path))
            UNIT_CHECK(strcmp(want, got) == 0,
                       "%s differs from the rendering from line %d on (UPDATE_GOLDEN=1 "
                       "rewrites it; review the diff)", path,
                       line_of_first_difference(want, got));
        free(want);
    }
    free(path);
}

static char *find_on_path(const char *name)
{
    const char *path = getenv("PATH");
    char dir[1024];
    for (const char *p = path; p && *p;) {
        size_t n = strcspn(p, ":");
        snprintf(dir, sizeof dir, "%.*s", (int)n, p);
        char *candidate = tk_path(dir[0] ? dir : ".", name);
        if (access(candidate, X_OK) == 0)
            return candidate;
        free(candidate);
        p += n + (p[n] == ':');
    }
    return NULL;
}

/* xmllint --noout --schema junit.xsd: exit 0 means valid. */
/* Runs xmllint --noout --schema junit.xsd on xml; returns its exit status
 * (0 = valid) and its messages in *output (malloc'd). */
static int schema_status(const char *xml, char **output)
{
    char *xmllint = find_on_path("xmllint");
    if (!xmllint) {
        *output = strdup("xmllint not found on PATH: install libxml2-utils");
        return -2;
    }
    char *dir = tk_tmpdir("reports-xsd");
    char *file = tk_path(dir, "junit.xml");
    tk_write(file, xml);
    char *argv[] = {xmllint, "--noout", "--schema", SMOKE_TEST_DATA "/junit.xsd", file, NULL};
    tk_result r;
    tk_run(argv, NULL, 30000, &r);
    *output = r.output;
    tk_rmtree(dir);
    free(file);
    free(dir);
    free(xmllint);
    return r.status;
}

static void check_schema(const char *what, const char *xml)
{
    char *output = NULL;
    int status = schema_status(xml, &output);
    UNIT_CHECK(status == 0, "%s: junit.xml is not valid against junit.xsd (exit %d):\n%s",
               what, status, output ? output : "");
    free(output);
}

/* 1 when the first tag that starts with `open` holds `attrs`. */
static int tag_has(const char *xml, const char *open, const char *attrs)
{
    const char *tag = strstr(xml, open);
    const char *end = tag ? strchr(tag, '>') : NULL;
    const char *at = tag ? strstr(tag, attrs) : NULL;
    return end && at && at < end;
}

/* The counts on <testsuites> and <testsuite> must agree with the
 * testcases below them: the phases and the verdict. */
static void check_junit_counts(const char *xml, size_t failures, size_t skipped)
{
    char want[160];
    snprintf(want, sizeof want, " tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"%zu\"",
             NPHASES + 1, failures, skipped);
    UNIT_CHECK(tag_has(xml, "<testsuites name=\"band-smoke\"", want), "no <testsuites%s in:\n%s",
               want, xml);
    UNIT_CHECK(tag_has(xml, "<testsuite name=\"band-smoke run ", want), "no <testsuite%s in:\n%s",
               want, xml);
    UNIT_CHECK(count(xml, "<testcase ") == NPHASES + 1, "%zu testcases",
               count(xml, "<testcase "));
    UNIT_CHECK(count(xml, "<failure ") == failures, "%zu failures", count(xml, "<failure "));
    UNIT_CHECK(count(xml, "<skipped ") == skipped, "%zu skipped", count(xml, "<skipped "));
}

/* Renders one case, compares both files with their goldens, validates the
 * XML and checks that a second rendering gives the same bytes. */
static void check_case(const char *name, const state_t *st, int64_t now, size_t failures,
                       size_t skipped)
{
    report_input in = input_for(st, now);
    char *md = evidence_render(&in), *xml = junit_render(&in);
    char *md2 = evidence_render(&in), *xml2 = junit_render(&in);
    if (UNIT_CHECK(md && xml && md2 && xml2, "%s: a renderer returned NULL", name)) {
        char file[64];
        snprintf(file, sizeof file, "%s.md", name);
        check_golden(file, md);
        snprintf(file, sizeof file, "%s.xml", name);
        check_golden(file, xml);
        UNIT_CHECK(strcmp(md, md2) == 0 && strcmp(xml, xml2) == 0,
                   "%s: two renderings of one input differ", name);
        check_schema(name, xml);
        check_junit_counts(xml, failures, skipped);
    }
    free(md);
    free(xml);
    free(md2);
    free(xml2);
}

/* ---- golden cases ------------------------------------------------------------ */

static void test_golden_empty_run(void)
{
    state_t *st = empty_run();
    check_case("empty", st, T0 + 5 * SEC, 0, NPHASES + 1);
    state_free(st);
}

static void test_golden_pass_run(void)
{
    state_t *st = pass_run();
    UNIT_CHECK(state_verdict_of(st) == VERDICT_PASS, "fixture is not a PASS run");
    check_case("pass", st, T0 + 510 * SEC, 0, 0);
    state_free(st);
}

static void test_golden_fail_run(void)
{
    state_t *st = fail_run();
    UNIT_CHECK(state_verdict_of(st) == VERDICT_FAIL, "fixture is not a FAIL run");
    check_case("fail", st, T0 + 610 * SEC, 3, 5);
    state_free(st);
}

static void test_golden_incomplete_run(void)
{
    state_t *st = incomplete_run();
    UNIT_CHECK(state_verdict_of(st) == VERDICT_INCOMPLETE, "fixture is not INCOMPLETE");
    check_case("incomplete", st, T0 + 80 * SEC, 0, 7);
    state_free(st);
}

/* The facts each report must state, checked apart from the goldens so a
 * careless UPDATE_GOLDEN cannot bless a report that lost them. */
static void test_reports_state_what_matters(void)
{
    state_t *pass = pass_run(), *fail = fail_run(), *inc = incomplete_run();
    report_input in = input_for(pass, T0 + 510 * SEC);
    char *md = evidence_render(&in);
    UNIT_CHECK(md && strstr(md, "**PASS**"), "PASS verdict missing");
    UNIT_CHECK(md && strstr(md, "- Outage (disconnect to reconnect): 48.5 s"), "Wi-Fi outage");
    UNIT_CHECK(md && strstr(md, "the host slept 1 min 5 s"), "measured sleep");
    UNIT_CHECK(md && strstr(md, "```mermaid\ngantt\n"), "no gantt chart");
    UNIT_CHECK(md && strstr(md, "dateFormat x\n"), "gantt without dateFormat x");
    free(md);

    in = input_for(fail, T0 + 610 * SEC);
    md = evidence_render(&in);
    UNIT_CHECK(md && strstr(md, "**FAIL**"), "FAIL verdict missing");
    UNIT_CHECK(md && strstr(md, "- Probe after-wifi-reconnect, latest of 2 attempts: "
                                "HTTP 502 from the staging REST API"), "failed probe and why");
    UNIT_CHECK(md && strstr(md, "Probe initial, attempt 1, agent generation 1 | failed"),
               "failed first attempt");
    UNIT_CHECK(md && strstr(md, "Probe initial, attempt 2, agent generation 1 | passed"),
               "passed retry");
    UNIT_CHECK(md && strstr(md, "- Room room-77aa0b13 is still recorded"), "unreaped room");
    UNIT_CHECK(md && !strstr(md, "may still hold"), "a room with an id reported as maybe made");
    free(md);
    /* a title without an id: the room create was never answered */
    char kept_room[STATE_ID_SZ];
    memcpy(kept_room, fail->room_id, sizeof kept_room);
    fail->room_id[0] = '\0';
    snprintf(fail->room_title, sizeof fail->room_title, "Sandbox smoke \xE2\x80\x94 c0ffee42 #0a1b2c3d");
    md = evidence_render(&in);
    UNIT_CHECK(md && strstr(md, "- Band may still hold a room titled Sandbox smoke \xE2\x80\x94 "
                                "c0ffee42 #0a1b2c3d: its create was never answered"),
               "a title without an id is not in Follow-up");
    memcpy(fail->room_id, kept_room, sizeof kept_room);
    fail->room_title[0] = '\0';
    UNIT_CHECK(md && !strstr(md, "retry it with"), "a failed run offered a retry");
    UNIT_CHECK(md && strstr(md, "- Diagnostics of the failed phase phase.07.after-wifi-reconnect "
                                "(Probe after Wi-Fi reconnect) (the end of agent.log and `sbx policy "
                                "log`, redacted) are in the state folder: "
                                "diagnostics.after-wifi-reconnect.txt.\n"),
               "Follow-up does not name the diagnostics file");
    UNIT_CHECK(md && strstr(md, "HTTP 502 from the staging REST API\n  ```text\n"
                                "  == phase.07.after-wifi-reconnect: After Wi-Fi reconnect "
                                "(run c0ffee42)\n"),
               "What failed does not show the failed phase's own lines");
    free(md);
    char *xml = junit_render(&in);
    UNIT_CHECK(xml && strstr(xml, "HTTP 502 from the staging REST API\n\nThe phase's own lines:\n"
                                  "== phase.07.after-wifi-reconnect"),
               "the failure does not carry the phase's own lines");
    UNIT_CHECK(xml && strstr(xml, "<system-out>== phase.07"), "system-out without the lines");
    UNIT_CHECK(xml && strstr(xml, "<testsuite name=\"band-smoke run c0ffee42\""),
               "the suite name does not carry the run id");
    UNIT_CHECK(xml && strstr(xml, "name=\"verdict\" time=\"0.000\">\n      <failure "
                                  "message=\"verdict FAIL: probe after-wifi-reconnect failed; "
                                  "phase after-wifi-reconnect failed; phase cleanup failed; "
                                  "the run was recorded as failed; mandatory probe "
                                  "after-sleep-wake has no attempt"),
               "no failing verdict case with its reasons");
    free(xml);

    /* The same failures in a run that goes on: retry commands, and live ids
     * are not "unreaped". */
    fail->phase = RUN_AWAITING_WIFI;
    md = evidence_render(&in);
    UNIT_CHECK(md && strstr(md, "retry it with `ctest --test-dir build -R "
                                "'^phase\\.07\\.after-wifi-reconnect$' --output-on-failure`"),
               "no retry command for the failed probe");
    UNIT_CHECK(md && strstr(md, "re-run it with `ctest --test-dir build -R "
                                "'^phase\\.11\\.cleanup$' --output-on-failure`"),
               "no re-run command for the failed phase");
    UNIT_CHECK(md && !strstr(md, "is still recorded"), "live ids reported as unreaped");
    free(md);

    in = input_for(inc, T0 + 80 * SEC);
    md = evidence_render(&in);
    UNIT_CHECK(md && strstr(md, "**INCOMPLETE**"), "INCOMPLETE verdict missing");
    UNIT_CHECK(md && strstr(md, "Missing mandatory probes: `after-wifi-reconnect`, "
                                "`after-sleep-wake`, `after-daemon-restart`."), "missing list");
    UNIT_CHECK(md && strstr(md, "- The run waits at the Wi-Fi checkpoint"), "no instruction");
    UNIT_CHECK(md && strstr(md, "`after-wifi-reconnect` (phase.07.after-wifi-reconnect)"),
               "missing probe without its phase");
    free(md);
    xml = junit_render(&in);
    UNIT_CHECK(xml && strstr(xml, "name=\"verdict\" time=\"0.000\">\n      <skipped "
                                  "message=\"verdict INCOMPLETE: mandatory probe "
                                  "after-wifi-reconnect has no attempt;"),
               "no skipped verdict case with the reason");
    free(xml);
    in = input_for(pass, T0 + 510 * SEC);
    xml = junit_render(&in);
    UNIT_CHECK(xml && strstr(xml, "name=\"verdict\" time=\"0.000\"/>"), "PASS verdict case");
    free(xml);

    /* Only probes decide the verdict, but a failed phase is still news. */
    state_t *early = new_run("e4e4e4e4");
    set_phase(early, "preflight", RESULT_FAILED, T0, 300, "SBX_SANDBOX is not set");
    in = input_for(early, T0 + SEC);
    md = evidence_render(&in);
    UNIT_CHECK(md && strstr(md, "**INCOMPLETE**"), "a failed preflight changed the verdict");
    UNIT_CHECK(md && strstr(md, "What failed:\n\n- Phase phase.02.preflight (Preflight): "
                                "SBX\\_SANDBOX is not set\n"), "failed phase not in Result");
    free(md);
    state_free(early);
    state_free(pass);
    state_free(fail);
    state_free(inc);
}

/* ---- hostile text ---------------------------------------------------------- */

#define NASTY                                                                         \
    "q\"uote 'apos' <tag a=\"1\"> & &amp; ]]> ]]]]><![CDATA[ |pipe| l1\nl2\r\n\ttab "   \
    "\x01\x02\x08\x0b\x0c\x0e\x1f\x7f\xc2\x85 ctl bad\xff\xfe\x80 over\xc0\xbc sur\xed\xa0\x80 " \
    "nonchar\xef\xbf\xbe cut\xe2\x82 ok \xc3\xa9 \xe6\x97\xa5 `tick` *b* _u_ [l](x) "   \
    "# h; s: c %% p \\ end"

static const report_phase hostile_phases[] = {
    {"start", "phase.01.start", "title: #1; `x`\n%% <b>", NULL},
    {"initial", "phase.05.initial", "section ;;", "initial"},
    {"ghost", "phase.99.ghost", ":#;", NULL},
};

static state_t *hostile_run(void)
{
    state_t *st = new_run("<&\"]]>\x01\xff");
    FILL(st->sandbox_name, NASTY);
    FILL(st->workspace, NASTY);
    FILL(st->sbx_version, NASTY);
    FILL(st->sdk_version, NASTY);
    snprintf(st->carried_from, sizeof st->carried_from, "|\n]]>\x02");
    FILL(st->room_id, NASTY);
    set_phase(st, "start", RESULT_PASSED, T0, 10, NASTY);
    set_phase(st, "initial", RESULT_FAILED, T0 + SEC, 10, NASTY);
    state_set_phase_output(st, "initial", NASTY "\n```\n  ```text\n" NASTY "\n");
    set_phase(st, "ghost", RESULT_SKIPPED, T0 + 2 * SEC, 0, NASTY);
    set_phase(st, "n|a\nme<&", RESULT_FAILED, T0 + 3 * SEC, 0, NASTY);
    add_probe(st, "initial", 0, T0 + 1500, 7, "<m&>|\n", 1, NASTY);
    add_probe(st, "l|a<b>\n]]>", 0, T0 + 1600, 7, NASTY, 1, NASTY);
    state_set_residual(st, "sleep_wake", NASTY);
    state_set_residual(st, "daemon_restart", NASTY);
    FILL(st->evidence.wifi.disconnect_line, NASTY);
    snprintf(st->evidence.sleep.method, sizeof st->evidence.sleep.method, "operator");
    FILL(st->evidence.sleep.sandbox_status, NASTY);
    FILL(st->evidence.daemon_restart.agent_exit, NASTY);
    st->evidence.wifi.disconnect_at_ms = T0 + 1700;
    st->evidence.wifi.reconnect_at_ms = T0 + 1800;
    st->phase = RUN_FAILED;
    return st;
}

/* Strict UTF-8 (no overlongs, surrogates or values past U+10FFFF),
 * written apart from textbuf so the check does not trust the code under
 * test. Returns the offset of the first bad byte, or -1. */
static long first_bad_utf8(const unsigned char *s)
{
    const unsigned char *start = s;
    while (*s) {
        int len = *s < 0x80 ? 1 : (*s >> 5) == 6 ? 2 : (*s >> 4) == 14 ? 3
                                : (*s >> 3) == 30 ? 4 : 0;
        if (len == 0)
            return (long)(s - start);
        unsigned cp = *s & (0x7Fu >> (len == 1 ? 0 : len));
        for (int i = 1; i < len; i++) {
            if ((s[i] & 0xC0) != 0x80)
                return (long)(s - start);
            cp = (cp << 6) | (s[i] & 0x3Fu);
        }
        unsigned min = len == 2 ? 0x80 : len == 3 ? 0x800 : len == 4 ? 0x10000 : 0;
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return (long)(s - start);
        s += len;
    }
    return -1;
}

static long first_control(const char *s, const char *allowed)
{
    for (const char *p = s; *p; p++)
        if (((unsigned char)*p < 0x20 && !strchr(allowed, *p)) || *p == 0x7F)
            return (long)(p - s);
    return -1;
}

/* Table cells are separated by '|' not preceded by a backslash. */
static int count_cells(const char *line, size_t len)
{
    int n = 0;
    for (size_t i = 0; i < len; i++)
        n += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
    return n;
}

/* Rows of a Markdown table that would not render as one row of cells:
 * not closed by '|', or with another cell count than the header. */
static int bad_table_rows(const char *md)
{
    int want = -1, bad = 0;
    for (const char *line = md; *line;) {
        size_t len = strcspn(line, "\n");
        if (len > 0 && line[0] == '|') {
            int cells = count_cells(line, len);
            if (want < 0)
                want = cells;
            if (line[len - 1] != '|' || cells != want) {
                fprintf(stderr, "bad table row: %.*s\n", (int)len, line);
                bad++;
            }
        } else {
            want = -1;
        }
        line += len + (line[len] == '\n');
    }
    return bad;
}

static int is_gantt_statement(const char *line)
{
    static const char *const starts[] = {"gantt", "    title ", "    dateFormat ",
                                         "    axisFormat ", "    section "};
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++)
        if (strncmp(line, starts[i], strlen(starts[i])) == 0)
            return 1;
    return 0;
}

/* A task line is "    <mark> name :tags, start, end": one ':' only, no
 * '#', ';' or '%', and the name starts with its 3-byte mark. */
static int is_safe_task(const char *line, size_t len)
{
    size_t colons = 0;
    for (size_t i = 0; i < len; i++)
        colons += line[i] == ':';
    return colons == 1 && !memchr(line, '#', len) && !memchr(line, ';', len) &&
           !memchr(line, '%', len) && len > 8 && (unsigned char)line[4] == 0xE2 &&
           line[7] == ' ';
}

/* Lines of the first mermaid block that could end or hijack a task name;
 * -1 when there is no block or it has no task. */
static int bad_mermaid_lines(const char *md)
{
    const char *block = strstr(md, "```mermaid\n");
    const char *end = block ? strstr(block + 11, "```") : NULL;
    if (!end)
        return -1;
    int tasks = 0, bad = 0;
    for (const char *line = block + 11; line < end;) {
        size_t len = strcspn(line, "\n");
        if (!is_gantt_statement(line)) {
            tasks++;
            bad += !is_safe_task(line, len);
        } else if (strncmp(line, "    title ", 10) == 0) {
            bad += memchr(line, '#', len) || memchr(line, ';', len);
        }
        if (bad)
            fprintf(stderr, "unsafe mermaid line: %.*s\n", (int)len, line);
        line += len + 1;
    }
    return tasks ? bad : -1;
}

static void test_hostile_text_stays_valid(void)
{
    state_t *st = hostile_run();
    report_input in = {st, hostile_phases, 3, "1.0 <&> ]]>", T0 + 9 * SEC};
    char *md = evidence_render(&in), *xml = junit_render(&in);
    if (UNIT_CHECK(md && xml, "a renderer returned NULL")) {
        check_schema("hostile", xml);
        UNIT_CHECK(strstr(xml, "]]>") == NULL, "]]> in junit.xml");
        UNIT_CHECK(strstr(xml, "<tag") == NULL, "raw tag in junit.xml");
        /* Outside the phases' code blocks, where text is literal, every <
         * is escaped; inside them no line may close the fence early. */
        const char *open = strstr(md, "  ```text\n");
        const char *close = open ? strstr(open + 10, "\n  ```\n") : NULL;
        UNIT_CHECK(open && close, "no code block for the failed phase's lines");
        UNIT_CHECK(!open || !close || count_between(open + 10, close, "`") == 0,
                   "a backtick inside the code block");
        for (const char *lt = strchr(md, '<'); lt; lt = strchr(lt + 1, '<'))
            UNIT_CHECK((lt > md && lt[-1] == '\\') || (open && close && lt > open && lt < close),
                       "unescaped < in evidence.md: %.20s", lt);
        long bad = first_bad_utf8((const unsigned char *)xml);
        UNIT_CHECK(bad < 0, "invalid UTF-8 in junit.xml at byte %ld", bad);
        bad = first_bad_utf8((const unsigned char *)md);
        UNIT_CHECK(bad < 0, "invalid UTF-8 in evidence.md at byte %ld", bad);
        bad = first_control(xml, "\t\n");
        UNIT_CHECK(bad < 0, "control byte in junit.xml at %ld", bad);
        bad = first_control(md, "\n");
        UNIT_CHECK(bad < 0, "control byte in evidence.md at %ld", bad);
        UNIT_CHECK(strstr(xml, "\xef\xbf\xbd") && strstr(md, "\xef\xbf\xbd"),
                   "invalid bytes were not replaced by U+FFFD");
        UNIT_CHECK(strstr(xml, "\xef\xbf\xbe") == NULL, "U+FFFE kept in XML");
        UNIT_CHECK(strstr(xml, "\xc2\x85") == NULL && strstr(md, "\xc2\x85") == NULL,
                   "C1 control NEL kept");
        UNIT_CHECK(strstr(xml, "\xc3\xa9 \xe6\x97\xa5") && strstr(md, "\xc3\xa9 \xe6\x97\xa5"),
                   "valid UTF-8 was not kept");
        UNIT_CHECK(strstr(md, "\\|pipe\\|") != NULL, "pipe not escaped in Markdown");
        UNIT_CHECK(bad_table_rows(md) == 0, "broken Markdown table rows (listed above)");
        UNIT_CHECK(bad_mermaid_lines(md) == 0, "unsafe mermaid lines (listed above)");
    }
    free(md);
    free(xml);
    state_free(st);
}

/* Every way a byte can be undecodable gives one U+FFFD per byte, so a
 * disguised '<' (0xC0 0xBC) never comes out as '<'. */
static void test_utf8_decoder_rejects_disguises(void)
{
    static const struct {
        const char *in;
        size_t used;
        uint32_t cp;
    } cases[] = {
        {"A", 1, 'A'},           {"\xc3\xa9", 2, 0xE9},       {"\xe6\x97\xa5", 3, 0x65E5},
        {"\xf0\x9f\x98\x80", 4, 0x1F600}, {"\xc0\xbc", 1, TB_REPLACEMENT},
        {"\xe0\x80\xbc", 1, TB_REPLACEMENT}, {"\xed\xa0\x80", 1, TB_REPLACEMENT},
        {"\xf4\x90\x80\x80", 1, TB_REPLACEMENT}, {"\xe2\x82", 1, TB_REPLACEMENT},
        {"\x80", 1, TB_REPLACEMENT}, {"\xff", 1, TB_REPLACEMENT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t cp = 0;
        size_t used = tb_utf8_next(cases[i].in, strlen(cases[i].in), &cp);
        UNIT_CHECK(used == cases[i].used && cp == cases[i].cp,
                   "case %zu: used %zu cp U+%04X, want %zu U+%04X", i, used, (unsigned)cp,
                   cases[i].used, (unsigned)cases[i].cp);
    }
}

/* The checkers above must be able to fail, or passing them proves nothing. */
static void test_checkers_catch_broken_output(void)
{
    state_t *st = pass_run();
    report_input in = input_for(st, T0 + 510 * SEC);
    char *xml = junit_render(&in);
    char *suite = xml ? strstr(xml, "<testsuite ") : NULL;
    char *cut = suite ? strstr(suite, " errors=\"0\" skipped") : NULL;
    if (UNIT_CHECK(cut != NULL, "no errors attribute to remove")) {
        memmove(cut, cut + 11, strlen(cut + 11) + 1);
        char *output = NULL;
        UNIT_CHECK(schema_status(xml, &output) > 0, "xmllint accepted a testsuite without errors");
        UNIT_CHECK(output && strstr(output, "errors"), "xmllint said: %s", output ? output : "");
        free(output);
    }
    free(xml);
    state_free(st);
    UNIT_CHECK(bad_table_rows("| a | b |\n|---|---|\n| x | y | z |\n| w \\| v | u |\n") == 1,
               "table checker missed an extra cell");
    UNIT_CHECK(bad_table_rows("| a | b |\n|---|---|\n| x | y\n") == 1,
               "table checker missed an open row");
    UNIT_CHECK(bad_mermaid_lines("```mermaid\ngantt\n    \xe2\x9c\x93 a: b :done, 1, 2\n```\n") == 1,
               "mermaid checker missed a colon in a name");
    UNIT_CHECK(bad_mermaid_lines("```mermaid\ngantt\n    Section x :done, 1, 2\n```\n") == 1,
               "mermaid checker missed a name without its mark");
    UNIT_CHECK(first_bad_utf8((const unsigned char *)"ok \xc0\xbc") == 3, "overlong accepted");
    UNIT_CHECK(first_bad_utf8((const unsigned char *)"\xed\xa0\x80") == 0, "surrogate accepted");
    UNIT_CHECK(first_control("a\x7f", "\n") == 1, "DEL not caught");
}

/* ---- secrets ------------------------------------------------------------------ */

static void test_secrets_never_reach_a_report(void)
{
    redact_clear();
    UNIT_CHECK(redact_add_secret(CANARY) == ERR_OK, "canary refused");
    UNIT_CHECK(redact_add_secret(CANARY_SPECIAL) == ERR_OK, "special canary refused");
    state_t *st = pass_run();
    const char *planted = "probe failed; key " CANARY " and " CANARY_SPECIAL " leaked";
    snprintf(st->probes[0].detail, STATE_TEXT_SZ, "%s", planted);
    snprintf(st->phases[4].detail, STATE_TEXT_SZ, "%s", planted);
    st->phases[4].status = RESULT_FAILED; /* its own lines are shown only when it failed */
    snprintf(st->phases[4].output, STATE_OUTPUT_SZ, "line one\n%s\n", planted);
    snprintf(st->residual_sleep_wake, STATE_TEXT_SZ, "%s", planted);
    snprintf(st->workspace, STATE_PATH_SZ, "/home/%s", CANARY);
    snprintf(st->evidence.wifi.reconnect_line, STATE_TEXT_SZ, "X-API-Key: %s", CANARY);
    report_input in = input_for(st, T0 + 510 * SEC);
    char *md = evidence_render(&in), *xml = junit_render(&in);
    if (UNIT_CHECK(md && xml, "a renderer returned NULL")) {
        static const char *const forms[] = {
            CANARY, CANARY_SPECIAL, "k3y\\&\\<sec\\|ret\\>\\_\\*x", "k3y&amp;&lt;sec|ret&gt;_*x",
            "k3y", "sec|ret", "sec\\|ret",
        };
        for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
            UNIT_CHECK(strstr(md, forms[i]) == NULL, "evidence.md holds \"%s\"", forms[i]);
            UNIT_CHECK(strstr(xml, forms[i]) == NULL, "junit.xml holds \"%s\"", forms[i]);
        }
        UNIT_CHECK(strstr(md, "\\[REDACTED\\]") != NULL, "evidence.md shows no mask");
        UNIT_CHECK(strstr(xml, REDACT_MASK) != NULL, "junit.xml shows no mask");
    }
    free(md);
    free(xml);
    state_free(st);
    redact_clear();
}

/* ---- report_write ------------------------------------------------------------- */

static size_t count_entries(const char *dir)
{
    size_t n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void check_written(const char *dir, const char *name, const char *want)
{
    char *path = tk_path(dir, name);
    struct stat sb;
    if (UNIT_CHECK(stat(path, &sb) == 0, "%s was not written", path)) {
        UNIT_CHECK((sb.st_mode & 07777) == 0600, "%s has mode %o", path,
                   (unsigned)(sb.st_mode & 07777));
        char *got = tk_read(path, NULL);
        UNIT_CHECK(got && strcmp(got, want) == 0, "%s is not the rendering", path);
        free(got);
    }
    free(path);
}

static void test_write_is_atomic_and_private(void)
{
    char *dir = tk_tmpdir("reports-write");
    char *old = tk_path(dir, REPORT_EVIDENCE_FILE);
    tk_write(old, "an older report\n");
    chmod(old, 0644);
    state_t *st = pass_run();
    report_input in = input_for(st, T0 + 510 * SEC);
    char err[ERR_BUFSZ] = "";
    /* A umask that would leave the temp file unwritable by its owner must
     * not change the mode the reports end up with. */
    mode_t saved = umask(0277);
    err_code rc = report_write(&in, dir, err);
    umask(saved);
    UNIT_CHECK(rc == ERR_OK, "report_write: %s", err);
    char *md = evidence_render(&in), *xml = junit_render(&in);
    check_written(dir, REPORT_EVIDENCE_FILE, md);
    check_written(dir, REPORT_JUNIT_FILE, xml);
    UNIT_CHECK(count_entries(dir) == 2, "%zu files in the folder, want only the two reports",
               count_entries(dir));
    free(md);
    free(xml);
    free(old);
    state_free(st);
    tk_rmtree(dir);
    free(dir);
}

static void test_write_failures_are_reported_and_clean(void)
{
    char err[ERR_BUFSZ] = "";
    state_t *st = empty_run();
    report_input in = input_for(st, T0);
    UNIT_CHECK(report_write(NULL, "/tmp", err) == ERR_USAGE, "NULL input accepted");
    UNIT_CHECK(report_write(&in, NULL, err) == ERR_USAGE, "NULL folder accepted");

    char *dir = tk_tmpdir("reports-fail");
    char *missing = tk_path(dir, "no-such-folder");
    UNIT_CHECK(report_write(&in, missing, err) == ERR_IO, "missing folder accepted");
    UNIT_CHECK(strstr(err, "no-such-folder") != NULL, "message does not name it: %s", err);

    /* junit.xml is a folder: evidence.md lands, the junit rename fails, and
     * its temp file must not stay behind. */
    char *blocker = tk_path(dir, REPORT_JUNIT_FILE);
    mkdir(blocker, 0700);
    UNIT_CHECK(report_write(&in, dir, err) == ERR_IO, "rename over a folder accepted");
    UNIT_CHECK(strstr(err, REPORT_JUNIT_FILE) != NULL, "message does not name it: %s", err);
    UNIT_CHECK(count_entries(dir) == 2, "%zu entries: a temp file was left behind",
               count_entries(dir));
    free(blocker);
    free(missing);
    tk_rmtree(dir);
    free(dir);
    state_free(st);
}


/* Reports are rendered from the state alone, so a phase's own lines must
 * survive the state file: saved redacted, cut to their last lines, and
 * absent (not an error) in files written before the field existed. */
static void test_phase_output_survives_the_state_file(void)
{
    redact_clear();
    UNIT_CHECK(redact_add_secret(CANARY) == ERR_OK, "canary refused");
    char *dir = tk_tmpdir("reports-output");
    state_store store;
    char err[ERR_BUFSZ];
    state_t *st = NULL, *back = NULL;
    if (!UNIT_CHECK(state_store_init(&store, dir, NULL, err) == ERR_OK &&
                        (st = state_new(&store)) != NULL, "store: %s", err))
        goto out;
    set_phase(st, "launch", RESULT_FAILED, T0, 10, "no readiness line");
    size_t big = 3 * STATE_OUTPUT_SZ;
    char *text = malloc(big);
    size_t len = 0;
    for (int i = 0; len + 80 < big; i++)
        len += (size_t)snprintf(text + len, big - len, "line %04d key " CANARY " end\n", i);
    UNIT_CHECK(state_set_phase_output(st, "launch", text) == ERR_OK, "set output");
    UNIT_CHECK(state_set_phase_output(st, "nope", "x") == ERR_NOTFOUND, "unknown phase");
    UNIT_CHECK(state_set_phase_diagnostics(st, "launch", "diagnostics.launch.txt") == ERR_OK,
               "set diagnostics");
    free(text);
    const char *out = state_phase(st, "launch")->output;
    UNIT_CHECK(strlen(out) < STATE_OUTPUT_SZ && strncmp(out, "line ", 5) == 0,
               "cut at a line start: %.30s", out);
    size_t n = strlen(out);
    UNIT_CHECK(n > 5 && strcmp(out + n - 5, " end\n") == 0, "the newest line is kept whole");
    UNIT_CHECK(!strstr(out, CANARY) && strstr(out, REDACT_MASK), "redacted");
    UNIT_CHECK(state_save(&store, st, err) == ERR_OK, "save: %s", err);
    UNIT_CHECK(state_load(&store, &back, err) == ERR_OK, "load: %s", err);
    UNIT_CHECK(back && strcmp(state_phase(back, "launch")->output, out) == 0 &&
                   strcmp(state_phase(back, "launch")->diagnostics, "diagnostics.launch.txt") == 0,
               "the output and the diagnostics file read back");
    set_phase(st, "launch", RESULT_PASSED, T0 + SEC, 10, "ready");
    UNIT_CHECK(state_phase(st, "launch")->output[0] == '\0' &&
                   state_phase(st, "launch")->diagnostics[0] == '\0',
               "a new result clears the output and the diagnostics");
    state_free(back);
    back = NULL;

    /* a file of before: phases without "output" */
    char *path = tk_path(dir, "state.json");
    char *json = tk_read(path, NULL);
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    cJSON *launch = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, "phases"), "launch");
    if (UNIT_CHECK(cJSON_GetObjectItemCaseSensitive(launch, "output") &&
                       cJSON_GetObjectItemCaseSensitive(launch, "diagnostics"),
                   "output and diagnostics written")) {
        cJSON_DeleteItemFromObjectCaseSensitive(launch, "output");
        cJSON_DeleteItemFromObjectCaseSensitive(launch, "diagnostics");
        char *older = cJSON_Print(root);
        tk_write(path, older);
        free(older);
        UNIT_CHECK(state_load(&store, &back, err) == ERR_OK, "an older file loads: %s", err);
        UNIT_CHECK(back && state_phase(back, "launch") &&
                       state_phase(back, "launch")->output[0] == '\0' &&
                       state_phase(back, "launch")->diagnostics[0] == '\0',
                   "no output or diagnostics in an older file");
    }
    cJSON_Delete(root);
    free(json);
    free(path);
out:
    state_free(st);
    state_free(back);
    tk_rmtree(dir);
    free(dir);
    redact_clear();
}

const unit_case unit_cases[] = {
    {"phase_output_survives_the_state_file", test_phase_output_survives_the_state_file},
    {"golden_empty_run", test_golden_empty_run},
    {"golden_pass_run", test_golden_pass_run},
    {"golden_fail_run", test_golden_fail_run},
    {"golden_incomplete_run", test_golden_incomplete_run},
    {"reports_state_what_matters", test_reports_state_what_matters},
    {"hostile_text_stays_valid", test_hostile_text_stays_valid},
    {"utf8_decoder_rejects_disguises", test_utf8_decoder_rejects_disguises},
    {"checkers_catch_broken_output", test_checkers_catch_broken_output},
    {"secrets_never_reach_a_report", test_secrets_never_reach_a_report},
    {"write_is_atomic_and_private", test_write_is_atomic_and_private},
    {"write_failures_are_reported_and_clean", test_write_failures_are_reported_and_clean},
    {NULL, NULL},
};
