/* agentlog: the evidence questions answered from real SDK log lines
 * (tests/data/agentlog, band-protocol.md 8.3), and notes written in the
 * same format read back. */
#include "agentlog.h"
#include "clock.h"
#include "redact.h"
#include "tk.h"
#include "unit.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DATA SMOKE_TEST_DATA "/agentlog/"
#define WIFI_LOG DATA "wifi-cycle.log"
#define GENERATIONS_LOG DATA "generations.log"
#define GARBAGE_LOG DATA "garbage.log"
#define CANARY "canary-agentlog-51d0e3"

static int64_t ms(const char *asctime)
{
    int64_t t = 0;
    CU_ASSERT_EQUAL_FATAL(clock_parse_iso(asctime, &t), ERR_OK);
    return t;
}

/* Byte offset of the line holding `needle` in the file at `path`. */
static int64_t offset_of(const char *path, const char *needle)
{
    size_t len = 0;
    char *text = tk_read(path, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    const char *hit = strstr(text, needle);
    CU_ASSERT_PTR_NOT_NULL_FATAL(hit);
    while (hit > text && hit[-1] != '\n')
        hit--;
    int64_t at = hit - text;
    free(text);
    return at;
}

static err_code scan(const char *path, int64_t from, int64_t after, agentlog_scan *out)
{
    agentlog_patterns p;
    agentlog_patterns_default(&p);
    char err[ERR_BUFSZ] = "";
    err_code rc = agentlog_scan_file(path, from, after, &p, out, err);
    UNIT_CHECK(rc == ERR_OK, "scan %s: %s: %s", path, err_str(rc), err);
    return rc;
}

static void test_defaults_are_the_sdk_lines(void)
{
    agentlog_patterns p;
    agentlog_patterns_default(&p);
    CU_ASSERT_STRING_EQUAL(p.ready, "Agent started:");
    CU_ASSERT_STRING_EQUAL(p.disconnect, "WebSocket disconnected");
    CU_ASSERT_STRING_EQUAL(p.reconnect, "WebSocket reconnected");
}

static void test_ready_line_is_found(void)
{
    agentlog_scan s;
    if (scan(WIFI_LOG, 0, 0, &s) != ERR_OK)
        return;
    CU_ASSERT_EQUAL(s.ready.at_ms, ms("2026-08-12 10:59:30,109"));
    CU_ASSERT_EQUAL(s.ready.offset, offset_of(WIFI_LOG, "Agent started:"));
    CU_ASSERT_STRING_EQUAL(s.ready.line, "2026-08-12 10:59:30,109 INFO band.agent: "
                                         "Agent started: e2e-band-1a2b3c4d-sandbox (band-sdk 1.6.0)");
    /* readiness ignores after_ms: the agent was ready before any checkpoint */
    if (scan(WIFI_LOG, 0, ms("2026-08-12 11:05:00,000"), &s) == ERR_OK)
        CU_ASSERT_EQUAL(s.ready.at_ms, ms("2026-08-12 10:59:30,109"));
}

static void test_drop_and_recovery_after_checkpoint(void)
{
    /* The log holds a drop at 11:04:58 (before the checkpoint) whose
     * reconnect lands at 11:05:01 (after it): neither may count as the
     * outage. The real one is 11:06:45 -> 11:07:58. */
    agentlog_scan s;
    if (scan(WIFI_LOG, 0, ms("2026-08-12 11:05:00,000"), &s) != ERR_OK)
        return;
    CU_ASSERT_EQUAL(s.disconnect.at_ms, ms("2026-08-12 11:06:45,311"));
    CU_ASSERT_EQUAL(s.disconnect.offset, offset_of(WIFI_LOG, "11:06:45,311 WARNING"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s.disconnect.line, "WebSocket disconnected: sent 1011 "
                                                     "(internal error) keepalive ping timeout"));
    CU_ASSERT_EQUAL(s.reconnect.at_ms, ms("2026-08-12 11:07:58,400"));
    CU_ASSERT_EQUAL(s.reconnect.offset, offset_of(WIFI_LOG, "11:07:58,400"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s.reconnect.line,
                                  "WebSocket reconnected \xe2\x80\x94 reconciling room state"));
    CU_ASSERT_EQUAL(s.disconnects, 2);
    CU_ASSERT_EQUAL(s.reconnects, 3);
}

static void test_counts_without_checkpoint(void)
{
    agentlog_scan s;
    if (scan(WIFI_LOG, 0, 0, &s) != ERR_OK)
        return;
    CU_ASSERT_EQUAL(s.disconnect.at_ms, ms("2026-08-12 11:04:58,500"));
    CU_ASSERT_EQUAL(s.reconnect.at_ms, ms("2026-08-12 11:05:01,200"));
    CU_ASSERT_EQUAL(s.disconnects, 3);
    CU_ASSERT_EQUAL(s.reconnects, 3);
    /* after the last line: nothing at all */
    if (scan(WIFI_LOG, 0, ms("2026-08-12 12:00:00,000"), &s) != ERR_OK)
        return;
    CU_ASSERT_EQUAL(s.disconnect.at_ms, 0);
    CU_ASSERT_EQUAL(s.reconnect.at_ms, 0);
    CU_ASSERT_EQUAL(s.disconnects + s.reconnects, 0);
}

static void test_reconnect_needs_an_earlier_disconnect(void)
{
    char *dir = tk_tmpdir("agentlog");
    char *path = tk_path(dir, "agent.log");
    tk_write(path,
             "2026-08-12 11:00:01,000 INFO band.platform.link: WebSocket reconnected \xe2\x80\x94 reconciling room state\n"
             "2026-08-12 11:00:05,000 WARNING band.platform.link: WebSocket disconnected: None\n"
             /* later in the file but stamped earlier (a clock step): not a recovery */
             "2026-08-12 11:00:04,000 INFO band.platform.link: WebSocket reconnected \xe2\x80\x94 reconciling room state\n");
    agentlog_scan s;
    if (scan(path, 0, 0, &s) == ERR_OK) {
        CU_ASSERT_EQUAL(s.disconnect.at_ms, ms("2026-08-12 11:00:05,000"));
        CU_ASSERT_EQUAL(s.reconnect.at_ms, 0);
        CU_ASSERT_EQUAL(s.reconnects, 2);
    }
    tk_rmtree(dir);
    free(path);
    free(dir);
}

static void test_from_offset_starts_a_generation(void)
{
    int64_t gen2 = offset_of(GENERATIONS_LOG, "launch generation 2");
    agentlog_scan s;
    if (scan(GENERATIONS_LOG, gen2, 0, &s) != ERR_OK)
        return;
    CU_ASSERT_EQUAL(s.ready.at_ms, ms("2026-08-12 11:20:24,871"));
    CU_ASSERT_EQUAL(s.ready.offset, offset_of(GENERATIONS_LOG, "e2e-band-9f8e7d6c-sandbox"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s.ready.line, "e2e-band-9f8e7d6c-sandbox"));
    /* from the top, the first generation's readiness comes first */
    if (scan(GENERATIONS_LOG, 0, 0, &s) != ERR_OK)
        return;
    CU_ASSERT_EQUAL(s.ready.at_ms, ms("2026-08-12 10:59:30,109"));
    /* an offset past the end is an empty generation, not an error */
    if (scan(GENERATIONS_LOG, 1 << 20, 0, &s) != ERR_OK)
        return;
    CU_ASSERT_EQUAL(s.ready.at_ms, 0);
    CU_ASSERT_EQUAL(s.exit.at_ms, 0);
}

static void test_last_exit_note_wins(void)
{
    agentlog_scan s;
    if (scan(GENERATIONS_LOG, 0, 0, &s) != ERR_OK)
        return;
    CU_ASSERT_EQUAL(s.exit.at_ms, ms("2026-08-12 11:31:47,640"));
    CU_ASSERT_EQUAL(s.exit.offset, offset_of(GENERATIONS_LOG, "ended: exit status 0"));
    CU_ASSERT_STRING_EQUAL(s.exit.line, "2026-08-12 11:31:47,640 INFO band_smoke.launcher: "
                                        "agent process ended: exit status 0");
}

static void test_env_overrides_patterns(void)
{
    const char *names[] = {"SMOKE_LOG_READY", "SMOKE_LOG_DISCONNECT", "SMOKE_LOG_RECONNECT"};
    char *saved[3];
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(names[i]);
        saved[i] = v ? strdup(v) : NULL;
    }
    setenv("SMOKE_LOG_READY", "Platform runtime started", 1);
    setenv("SMOKE_LOG_DISCONNECT", "Heartbeat response not received", 1);
    setenv("SMOKE_LOG_RECONNECT", "", 1); /* empty = the default */

    agentlog_patterns p;
    char err[ERR_BUFSZ] = "";
    err_code rc = agentlog_patterns_from_env(&p, err);
    UNIT_CHECK(rc == ERR_OK, "from_env: %s", err);
    CU_ASSERT_STRING_EQUAL(p.ready, "Platform runtime started");
    CU_ASSERT_STRING_EQUAL(p.reconnect, "WebSocket reconnected");
    agentlog_scan s;
    rc = agentlog_scan_file(WIFI_LOG, 0, ms("2026-08-12 11:05:00,000"), &p, &s, err);
    UNIT_CHECK(rc == ERR_OK, "scan: %s", err);
    CU_ASSERT_EQUAL(s.ready.at_ms, ms("2026-08-12 10:59:29,410"));
    CU_ASSERT_EQUAL(s.disconnect.at_ms, ms("2026-08-12 11:06:40,777"));
    CU_ASSERT_EQUAL(s.reconnect.at_ms, ms("2026-08-12 11:07:58,400"));
    CU_ASSERT_EQUAL(s.disconnects, 1);

    char too_long[AGENTLOG_PATTERN_SZ + 1];
    memset(too_long, 'x', sizeof too_long - 1);
    too_long[sizeof too_long - 1] = '\0';
    setenv("SMOKE_LOG_DISCONNECT", too_long, 1);
    CU_ASSERT_EQUAL(agentlog_patterns_from_env(&p, err), ERR_CONFIG);
    UNIT_CHECK(strstr(err, "SMOKE_LOG_DISCONNECT") != NULL, "message: %s", err);
    too_long[AGENTLOG_PATTERN_SZ - 1] = '\0'; /* exactly the limit fits */
    setenv("SMOKE_LOG_DISCONNECT", too_long, 1);
    CU_ASSERT_EQUAL(agentlog_patterns_from_env(&p, err), ERR_OK);

    for (int i = 0; i < 3; i++) {
        if (saved[i])
            setenv(names[i], saved[i], 1);
        else
            unsetenv(names[i]);
        free(saved[i]);
    }
}

static void test_missing_file_is_an_empty_log(void)
{
    agentlog_scan s;
    memset(&s, 0x5a, sizeof s);
    if (scan(DATA "no-such-agent.log", 0, 0, &s) != ERR_OK)
        return;
    CU_ASSERT_EQUAL(s.ready.at_ms, 0);
    CU_ASSERT_EQUAL(s.disconnect.at_ms, 0);
    CU_ASSERT_EQUAL(s.reconnect.at_ms, 0);
    CU_ASSERT_EQUAL(s.exit.at_ms, 0);
    CU_ASSERT_EQUAL(s.disconnects + s.reconnects, 0);
}

static void test_unreadable_and_bad_arguments(void)
{
    agentlog_patterns p;
    agentlog_patterns_default(&p);
    agentlog_scan s;
    char err[ERR_BUFSZ] = "";
    /* a folder opens but cannot be read as a file */
    CU_ASSERT_EQUAL(agentlog_scan_file(DATA, 0, 0, &p, &s, err), ERR_IO);
    UNIT_CHECK(strstr(err, "agentlog") != NULL, "message names the path: %s", err);
    CU_ASSERT_EQUAL(agentlog_scan_file(WIFI_LOG, -1, 0, &p, &s, err), ERR_USAGE);
    CU_ASSERT_EQUAL(agentlog_scan_file(NULL, 0, 0, &p, &s, err), ERR_USAGE);
}

static void test_garbage_lines_are_skipped(void)
{
    agentlog_scan s;
    if (scan(GARBAGE_LOG, 0, 0, &s) != ERR_OK)
        return;
    CU_ASSERT_EQUAL(s.disconnects, 1);
    CU_ASSERT_EQUAL(s.disconnect.at_ms, ms("2026-08-12 11:06:46,000"));
    CU_ASSERT_EQUAL(s.disconnect.offset, offset_of(GARBAGE_LOG, "11:06:46,000"));
    /* CRLF endings do not leak into the excerpt */
    CU_ASSERT_PTR_NULL(strchr(s.disconnect.line, '\r'));
    CU_ASSERT_EQUAL(s.reconnects, 1);
    CU_ASSERT_EQUAL(s.reconnect.at_ms, ms("2026-08-12 11:06:48,500"));
    /* "band_smoke.launcher agent process ended:" lacks the logger's colon */
    CU_ASSERT_EQUAL(s.exit.at_ms, 0);
    CU_ASSERT_EQUAL(s.ready.at_ms, 0);
}

static void test_overlong_lines_do_not_break_the_scan(void)
{
    char *dir = tk_tmpdir("agentlog");
    char *path = tk_path(dir, "agent.log");
    const char *head = "2026-08-12 11:06:45,311 WARNING band.platform.link: WebSocket disconnected: ";
    const char *after = "2026-08-12 11:07:58,400 INFO band.platform.link: WebSocket reconnected \xe2\x80\x94 reconciling room state\n";
    size_t pad = 200 * 1024, hl = strlen(head), al = strlen(after);
    char *text = malloc(hl + pad + 1 + hl + pad + 1 + al + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    /* one drop line with a huge tail, one 200 KB line of nothing, a recovery */
    size_t n = 0;
    memcpy(text + n, head, hl), n += hl;
    memset(text + n, 'x', pad), n += pad;
    text[n++] = '\n';
    memset(text + n, 'y', hl + pad), n += hl + pad;
    text[n++] = '\n';
    memcpy(text + n, after, al + 1);
    tk_write(path, text);

    agentlog_scan s;
    if (scan(path, 0, 0, &s) == ERR_OK) {
        CU_ASSERT_EQUAL(s.disconnect.at_ms, ms("2026-08-12 11:06:45,311"));
        CU_ASSERT_EQUAL(s.disconnect.offset, 0);
        CU_ASSERT_EQUAL(strlen(s.disconnect.line), AGENTLOG_LINE_SZ - 1);
        CU_ASSERT_EQUAL(s.reconnect.at_ms, ms("2026-08-12 11:07:58,400"));
        CU_ASSERT_EQUAL(s.reconnect.offset, (int64_t)(n));
        CU_ASSERT_EQUAL(s.disconnects, 1);
        CU_ASSERT_EQUAL(s.reconnects, 1);
    }
    free(text);
    tk_rmtree(dir);
    free(path);
    free(dir);
}

static void test_excerpts_are_redacted(void)
{
    redact_clear();
    CU_ASSERT_EQUAL(redact_add_secret(CANARY), ERR_OK);
    char *dir = tk_tmpdir("agentlog");
    char *path = tk_path(dir, "agent.log");
    tk_write(path, "2026-08-12 11:06:45,311 WARNING band.platform.link: WebSocket disconnected: "
                   "wss://h/api/v1/socket/websocket?api_key=" CANARY "&vsn=2.0.0 closed\n");
    agentlog_scan s;
    if (scan(path, 0, 0, &s) == ERR_OK) {
        CU_ASSERT_EQUAL(s.disconnects, 1);
        UNIT_CHECK(strstr(s.disconnect.line, CANARY) == NULL, "secret in excerpt: %s",
                   s.disconnect.line);
        CU_ASSERT_PTR_NOT_NULL(strstr(s.disconnect.line, "api_key=[REDACTED]&vsn=2.0.0 closed"));
    }
    tk_rmtree(dir);
    free(path);
    free(dir);
    redact_clear();
}

static void test_note_round_trip(void)
{
    redact_clear();
    CU_ASSERT_EQUAL(redact_add_secret(CANARY), ERR_OK);
    char *dir = tk_tmpdir("agentlog");
    char *path = tk_path(dir, "agent.log");
    tk_write(path, "2026-12-02 11:46:19,000 INFO band.agent: Agent started: a (band-sdk 1.6.0)\n");
    int fd = open(path, O_WRONLY | O_APPEND);
    CU_ASSERT_FATAL(fd >= 0);
    char err[ERR_BUFSZ] = "";
    int64_t when = ms("2026-12-02T11:46:20.123Z");
    err_code rc = agentlog_note(fd, when, "INFO", AGENTLOG_LAUNCHER,
                                AGENTLOG_EXIT_NOTE " exit status 1 (key " CANARY ")", err);
    UNIT_CHECK(rc == ERR_OK, "note: %s", err);
    /* a line break in the message must not forge a second log line */
    rc = agentlog_note(fd, when + 1, "WARNING", AGENTLOG_LAUNCHER,
                       "first\n2026-12-02 11:46:21,000 INFO band.platform.link: WebSocket reconnected", err);
    UNIT_CHECK(rc == ERR_OK, "note: %s", err);
    close(fd);

    char *text = tk_read(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_STRING_EQUAL(text,
        "2026-12-02 11:46:19,000 INFO band.agent: Agent started: a (band-sdk 1.6.0)\n"
        "2026-12-02 11:46:20,123 INFO band_smoke.launcher: agent process ended: exit status 1 (key [REDACTED])\n"
        "2026-12-02 11:46:20,124 WARNING band_smoke.launcher: first 2026-12-02 11:46:21,000 INFO "
        "band.platform.link: WebSocket reconnected\n");
    free(text);

    agentlog_scan s;
    if (scan(path, 0, 0, &s) == ERR_OK) {
        CU_ASSERT_EQUAL(s.exit.at_ms, when);
        CU_ASSERT_PTR_NOT_NULL(strstr(s.exit.line, "exit status 1"));
        CU_ASSERT_EQUAL(s.ready.at_ms, ms("2026-12-02 11:46:19,000"));
    }
    tk_rmtree(dir);
    free(path);
    free(dir);
    redact_clear();
}

/* Two launches under one generation number, as a band-smoke SIGKILLed
 * before it saved its launcher leaves them: launcher 4100 (never recorded,
 * still running) and 4200 (the recorded one). The stray's end, logged past
 * the new launch's offset, is not the new launch's end. */
#define TWO_LAUNCHES                                                                      \
    "2026-12-03 01:30:57,310 INFO band_smoke.launcher: launch generation 1 started sbx " \
    "(pid 4101; launcher 4100@777)\n"                                                     \
    "2026-12-03 01:30:57,465 INFO band.agent: Agent started: a (band-sdk 1.6.0)\n"        \
    "2026-12-03 01:30:57,558 INFO band_smoke.launcher: launch generation 1 started sbx " \
    "(pid 4201; launcher 4200@888)\n"                                                     \
    "2026-12-03 01:30:57,600 INFO band_smoke.launcher: agent process ended: exited with " \
    "status 1 (launch generation 1, launcher 4100@777)\n"                                 \
    "2026-12-03 01:30:57,700 INFO band.agent: launcher 4300@999) printed by the agent\n" \
    "2026-12-03 01:30:57,800 INFO band_smoke.launcher: launcher 42@888) an old format\n"

static char *write_log(char **dir, const char *text)
{
    *dir = tk_tmpdir("agentlog");
    char *path = tk_path(*dir, "agent.log");
    tk_write(path, text);
    return path;
}

static void test_exit_note_of_another_launcher_is_not_ours(void)
{
    char *dir, *path = write_log(&dir, TWO_LAUNCHES);
    int64_t from = offset_of(path, "launcher 4200@888"); /* the new launch's log_offset */
    agentlog_patterns p;
    agentlog_patterns_default(&p);
    agentlog_scan s;
    char err[ERR_BUFSZ] = "", id[AGENTLOG_LAUNCHER_ID_SZ];
    agentlog_launcher_id(4200, 888, id, sizeof id);
    CU_ASSERT_STRING_EQUAL(id, "launcher 4200@888)");
    CU_ASSERT_EQUAL(agentlog_scan_launch(path, from, id, &p, &s, err), ERR_OK);
    CU_ASSERT_EQUAL(s.exit.at_ms, 0);
    /* a prefix of the pid or the token is another launcher */
    agentlog_launcher_id(410, 777, id, sizeof id);
    CU_ASSERT_EQUAL(agentlog_scan_launch(path, from, id, &p, &s, err), ERR_OK);
    CU_ASSERT_EQUAL(s.exit.at_ms, 0);
    agentlog_launcher_id(4100, 77, id, sizeof id);
    CU_ASSERT_EQUAL(agentlog_scan_launch(path, from, id, &p, &s, err), ERR_OK);
    CU_ASSERT_EQUAL(s.exit.at_ms, 0);
    /* the stray's own end is still found under its own name */
    agentlog_launcher_id(4100, 777, id, sizeof id);
    CU_ASSERT_EQUAL(agentlog_scan_launch(path, from, id, &p, &s, err), ERR_OK);
    CU_ASSERT_EQUAL(s.exit.at_ms, ms("2026-12-03 01:30:57,600"));
    CU_ASSERT_EQUAL(agentlog_scan_launch(path, from, NULL, &p, &s, err), ERR_OK);
    CU_ASSERT_EQUAL(s.exit.at_ms, ms("2026-12-03 01:30:57,600"));
    CU_ASSERT_EQUAL(agentlog_scan_launch(path, -1, id, &p, &s, err), ERR_USAGE);
    tk_rmtree(dir);
    free(path);
    free(dir);
}

static void test_launchers_named_in_the_log(void)
{
    char *dir, *path = write_log(&dir, TWO_LAUNCHES);
    agentlog_launcher l[4];
    size_t n = 0;
    int more = -1;
    char err[ERR_BUFSZ] = "";
    CU_ASSERT_EQUAL(agentlog_launchers(path, 0, l, 4, &n, &more, err), ERR_OK);
    /* the agent's look-alike line is not a launcher note; pid 42 is one */
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT_EQUAL(more, 0);
    CU_ASSERT(l[0].pid == 4100 && l[0].start_token == 777 && l[0].ended);
    CU_ASSERT(l[1].pid == 4200 && l[1].start_token == 888 && !l[1].ended);
    CU_ASSERT(l[2].pid == 42 && l[2].start_token == 888 && !l[2].ended);
    CU_ASSERT_EQUAL(agentlog_launchers(path, 0, l, 1, &n, &more, err), ERR_OK);
    CU_ASSERT(n == 1 && more == 1 && l[0].pid == 4100);
    int64_t from = offset_of(path, "launcher 4200@888");
    CU_ASSERT_EQUAL(agentlog_launchers(path, from, l, 4, &n, &more, err), ERR_OK);
    CU_ASSERT(n == 3 && l[0].pid == 4200 && l[1].pid == 4100 && l[1].ended);
    char *none = tk_path(dir, "none.log");
    CU_ASSERT_EQUAL(agentlog_launchers(none, 0, l, 4, &n, &more, err), ERR_OK);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(agentlog_launchers(path, 0, NULL, 4, &n, &more, err), ERR_USAGE);
    free(none);
    tk_rmtree(dir);
    free(path);
    free(dir);
}

static void test_note_failures(void)
{
    char err[ERR_BUFSZ] = "";
    int fds[2];
    CU_ASSERT_FATAL(pipe(fds) == 0);
    /* the read end of a pipe cannot be written */
    CU_ASSERT_EQUAL(agentlog_note(fds[0], 0, "INFO", AGENTLOG_LAUNCHER, "x", err), ERR_IO);
    UNIT_CHECK(err[0] != '\0', "ERR_IO without a message");
    close(fds[0]);
    close(fds[1]);
    CU_ASSERT_EQUAL(agentlog_note(-1, 0, "INFO", AGENTLOG_LAUNCHER, "x", err), ERR_USAGE);
    CU_ASSERT_EQUAL(agentlog_note(1, 0, "INFO", AGENTLOG_LAUNCHER, NULL, err), ERR_USAGE);
}

const unit_case unit_cases[] = {
    {"defaults_are_the_sdk_lines", test_defaults_are_the_sdk_lines},
    {"ready_line_is_found", test_ready_line_is_found},
    {"drop_and_recovery_after_checkpoint", test_drop_and_recovery_after_checkpoint},
    {"counts_without_checkpoint", test_counts_without_checkpoint},
    {"reconnect_needs_an_earlier_disconnect", test_reconnect_needs_an_earlier_disconnect},
    {"from_offset_starts_a_generation", test_from_offset_starts_a_generation},
    {"last_exit_note_wins", test_last_exit_note_wins},
    {"env_overrides_patterns", test_env_overrides_patterns},
    {"missing_file_is_an_empty_log", test_missing_file_is_an_empty_log},
    {"unreadable_and_bad_arguments", test_unreadable_and_bad_arguments},
    {"garbage_lines_are_skipped", test_garbage_lines_are_skipped},
    {"overlong_lines_do_not_break_the_scan", test_overlong_lines_do_not_break_the_scan},
    {"excerpts_are_redacted", test_excerpts_are_redacted},
    {"note_round_trip", test_note_round_trip},
    {"exit_note_of_another_launcher_is_not_ours", test_exit_note_of_another_launcher_is_not_ours},
    {"launchers_named_in_the_log", test_launchers_named_in_the_log},
    {"note_failures", test_note_failures},
    {NULL, NULL},
};
