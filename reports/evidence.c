#include "evidence.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "textbuf.h"

#define NOT_RECORDED "(not recorded)"

/* The residual checks the state keeps, the probe each one explains, and
 * what the operator is asked to describe (seed workflow steps 8 and 9). */
typedef struct residual_check {
    const char *check;
    const char *title;
    const char *probe;
    const char *prompt;
} residual_check;

static const residual_check residual_checks[] = {
    {"sleep_wake", "Sleep/wake", "after-sleep-wake",
     "<did the VM and the agent survive; how did they recover>"},
    {"daemon_restart", "Daemon restart", "after-daemon-restart",
     "<survived? auto-resumed? what recovery took>"},
};
#define NRESIDUAL (sizeof residual_checks / sizeof residual_checks[0])

/* ---- escaping ---------------------------------------------------------- */

/* Inline Markdown, also inside table cells: one line, and no character
 * that could open emphasis, code, a link, HTML or end a cell. */
static void md_esc(tb_buf *b, uint32_t cp)
{
    if (cp == '\n' || cp == '\r' || cp == '\t') {
        tb_puts(b, " ");
        return;
    }
    if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0))
        return;
    if (cp < 0x80 && strchr("\\`*_<>[]|&~", (int)cp))
        tb_puts(b, "\\");
    tb_put_cp(b, cp);
}

static int is_ascii_alnum(uint32_t cp)
{
    return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9');
}

/* A Mermaid task name ends at ':', a line at '#' or ';', and '%' opens a
 * comment; keep only characters that are plain text to every version. */
static void mermaid_esc(tb_buf *b, uint32_t cp)
{
    int ascii_ok = is_ascii_alnum(cp) || (cp != 0 && cp < 0x80 && strchr("-._()/+,=@", (int)cp));
    if (ascii_ok || (cp >= 0xA0 && cp != TB_REPLACEMENT))
        tb_put_cp(b, cp);
    else
        tb_puts(b, " ");
}

/* Inside a fenced code block of a list item: every line indented two
 * spaces, no backtick (so no line can close the fence early), no control
 * character (a tab becomes spaces). */
static void item_code_esc(tb_buf *b, uint32_t cp)
{
    if (cp == '\n')
        tb_puts(b, "\n  ");
    else if (cp == '`')
        tb_puts(b, "'");
    else if (cp == '\t')
        tb_puts(b, "    ");
    else if (!(cp < 0x20 || (cp >= 0x7F && cp < 0xA0)))
        tb_put_cp(b, cp);
}

/* A phase's own lines (newline-ended), as a code block under its item. */
static void put_item_lines(tb_buf *b, const char *lines)
{
    if (!lines || !*lines)
        return;
    tb_puts(b, "\n  ```text\n  ");
    size_t n = strlen(lines);
    char *body = malloc(n + 1);
    if (body) {
        memcpy(body, lines, n + 1);
        if (n && body[n - 1] == '\n')
            body[n - 1] = '\0'; /* the fence comes after the last line's own break */
        tb_put_text(b, body, item_code_esc);
        free(body);
    }
    tb_puts(b, "\n  ```");
}

static void put_md(tb_buf *b, const char *text, const char *fallback)
{
    if (text && *text)
        tb_put_text(b, text, md_esc);
    else
        tb_puts(b, fallback);
}

static int has_ascii_alnum(const char *s)
{
    for (; s && *s; s++)
        if (is_ascii_alnum((unsigned char)*s))
            return 1;
    return 0;
}

/* Sanitized text for the chart, runs of spaces squeezed to one and trimmed;
 * fallback when nothing readable is left. Malloc'd; NULL when out of memory. */
static char *mermaid_text(const char *text, const char *fallback)
{
    tb_buf t;
    tb_init(&t);
    tb_put_text(&t, has_ascii_alnum(text) ? text : fallback, mermaid_esc);
    char *s = tb_take(&t);
    size_t n = 0;
    for (size_t i = 0; s && s[i]; i++)
        if (s[i] != ' ' || (n > 0 && s[n - 1] != ' '))
            s[n++] = s[i];
    while (n > 0 && s[n - 1] == ' ')
        n--;
    if (s)
        s[n] = '\0';
    return s;
}

/* `^phase\.05\.initial$` for ctest -R; only name characters survive, so
 * the result is safe inside a shell single quote and a Markdown code span. */
static void put_ctest_regex(tb_buf *b, const char *ctest_name)
{
    tb_puts(b, "^");
    for (const char *s = ctest_name; *s; s++) {
        if (*s == '.')
            tb_puts(b, "\\.");
        else if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                 (*s >= '0' && *s <= '9') || *s == '-' || *s == '_')
            tb_add(b, s, 1);
    }
    tb_puts(b, "$");
}

/* ---- small readers of the state ------------------------------------------ */

/* True for the first attempt of its label, so labels can be listed once. */
static int first_of_label(const state_t *st, int i)
{
    for (int j = 0; j < i; j++)
        if (strcmp(st->probes[j].label, st->probes[i].label) == 0)
            return 0;
    return 1;
}

static int attempt_number(const state_t *st, int i)
{
    int n = 0;
    for (int j = 0; j <= i; j++)
        n += strcmp(st->probes[j].label, st->probes[i].label) == 0;
    return n;
}

static int latest_failed(const state_t *st, const char *label)
{
    const state_probe *p = state_latest_probe(st, label);
    return p && !p->passed;
}

/* A failed phase whose probe's latest attempt failed says nothing its
 * probe does not; listing it again would only repeat the reason. */
static int is_own_phase_failure(const report_input *in, const state_phase_result *r)
{
    const report_phase *ph = report_phase_named(in, r->name);
    int probe_failed = ph && ph->probe_label && latest_failed(in->st, ph->probe_label);
    return r->status == RESULT_FAILED && !probe_failed;
}

static void put_time(tb_buf *b, int64_t ms)
{
    char iso[CLOCK_ISO_SZ];
    tb_puts(b, ms > 0 ? clock_format_iso(ms, iso) : NOT_RECORDED);
}

static void put_duration(tb_buf *b, int64_t ms)
{
    char dur[CLOCK_DUR_SZ];
    tb_puts(b, ms >= 0 ? clock_format_duration(ms, dur) : "-");
}

/* "phase.05.initial (Initial probe)", or the state's own key when the
 * suite's table does not know the phase. */
static void put_phase_ref(tb_buf *b, const report_input *in, const char *name)
{
    const report_phase *ph = report_phase_named(in, name);
    if (!ph) {
        put_md(b, name, "(unnamed)");
        return;
    }
    put_md(b, ph->ctest_name, "(unnamed)");
    if (ph->title && *ph->title) {
        tb_puts(b, " (");
        put_md(b, ph->title, "");
        tb_puts(b, ")");
    }
}

static void put_ctest_command(tb_buf *b, const report_phase *ph)
{
    tb_puts(b, "`ctest --test-dir build -R '");
    put_ctest_regex(b, ph->ctest_name);
    tb_puts(b, "' --output-on-failure`");
}

/* ---- Result ---------------------------------------------------------------- */

static int count_missing(const state_t *st)
{
    int n = 0;
    for (int i = 0; i < STATE_MANDATORY_PROBES; i++)
        n += state_latest_probe(st, state_mandatory_probes[i]) == NULL;
    return n;
}

static void put_missing_list(tb_buf *b, const state_t *st)
{
    tb_puts(b, "Missing mandatory probes: ");
    for (int i = 0, n = 0; i < STATE_MANDATORY_PROBES; i++) {
        if (!state_latest_probe(st, state_mandatory_probes[i]))
            tb_printf(b, "%s`%s`", n++ ? ", " : "", state_mandatory_probes[i]);
    }
    tb_puts(b, ".\n\n");
}

/* Failed phases matter even while the verdict, which only the probes
 * decide, is still INCOMPLETE: a failed preflight is why nothing ran. */
static int count_own_phase_failures(const report_input *in)
{
    int n = 0;
    for (int i = 0; i < in->st->nphases; i++)
        n += is_own_phase_failure(in, &in->st->phases[i]);
    return n;
}

static void put_failures(tb_buf *b, const report_input *in)
{
    const state_t *st = in->st;
    tb_puts(b, "What failed:\n\n");
    for (int i = 0; i < st->nprobes; i++) {
        const char *label = st->probes[i].label;
        if (!first_of_label(st, i) || !latest_failed(st, label))
            continue;
        tb_puts(b, "- Probe ");
        put_md(b, label, "(unlabelled)");
        tb_printf(b, ", latest of %d attempt%s: ", state_probe_attempts(st, label),
                  state_probe_attempts(st, label) == 1 ? "" : "s");
        put_md(b, state_latest_probe(st, label)->detail, "no detail recorded");
        const report_phase *ph = report_phase_for_probe(in, label);
        const state_phase_result *r = ph ? state_phase(st, ph->name) : NULL;
        if (r && r->status == RESULT_FAILED)
            put_item_lines(b, r->output);
        tb_puts(b, "\n");
    }
    for (int i = 0; i < st->nphases; i++) {
        if (!is_own_phase_failure(in, &st->phases[i]))
            continue;
        tb_puts(b, "- Phase ");
        put_phase_ref(b, in, st->phases[i].name);
        tb_puts(b, ": ");
        put_md(b, st->phases[i].detail, "no detail recorded");
        put_item_lines(b, st->phases[i].output);
        tb_puts(b, "\n");
    }
    if (st->phase == RUN_FAILED)
        tb_puts(b, "- The run was recorded as failed.\n");
    tb_puts(b, "\n");
}

static void put_result(tb_buf *b, const report_input *in)
{
    const state_t *st = in->st;
    state_verdict v = state_verdict_of(st);
    tb_printf(b, "## Result\n\n**%s**. The run stands at `%s`.\n\n", state_verdict_name(v),
              state_run_phase_name(st->phase));
    if (v == VERDICT_PASS) {
        tb_puts(b, "Every mandatory probe passed on its latest attempt:");
        for (int i = 0; i < STATE_MANDATORY_PROBES; i++)
            tb_printf(b, "%s `%s`", i ? "," : "", state_mandatory_probes[i]);
        tb_puts(b, ".\n\n");
        return;
    }
    if (v == VERDICT_FAIL || count_own_phase_failures(in) > 0)
        put_failures(b, in);
    if (count_missing(st) > 0)
        put_missing_list(b, st);
}

/* ---- Environment ----------------------------------------------------------- */

static void put_item(tb_buf *b, const char *name, const char *value)
{
    tb_printf(b, "- %s: ", name);
    put_md(b, value, NOT_RECORDED);
    tb_puts(b, "\n");
}

static void put_run_duration(tb_buf *b, const report_input *in)
{
    const state_t *st = in->st;
    tb_puts(b, "- Duration: ");
    if (st->started_at_ms <= 0) {
        tb_puts(b, NOT_RECORDED "\n");
    } else if (state_is_terminal(st) && st->updated_at_ms >= st->started_at_ms) {
        put_duration(b, st->updated_at_ms - st->started_at_ms);
        tb_puts(b, " (start to last update)\n");
    } else {
        put_duration(b, in->now_ms >= st->started_at_ms ? in->now_ms - st->started_at_ms : -1);
        tb_puts(b, " (so far)\n");
    }
}

static void put_environment(tb_buf *b, const report_input *in)
{
    const state_t *st = in->st;
    tb_puts(b, "## Environment\n\n");
    put_item(b, "Run id", st->run_id);
    tb_puts(b, "- Started: ");
    put_time(b, st->started_at_ms);
    tb_puts(b, "\n");
    put_run_duration(b, in);
    put_item(b, "band-sdk version", st->sdk_version);
    put_item(b, "sbx version", st->sbx_version);
    put_item(b, "Suite version", in->suite_version);
    put_item(b, "Sandbox", st->sandbox_name);
    put_item(b, "Workspace", st->workspace);
    if (st->agent_name[0] || st->agent_id[0])
        put_item(b, "Band agent", st->agent_name[0] ? st->agent_name : st->agent_id);
    if (st->carried_from[0])
        put_item(b, "Carried unreaped ids over from run", st->carried_from);
    tb_puts(b, "- Report rendered: ");
    put_time(b, in->now_ms);
    tb_puts(b, "\n\n");
}

/* ---- Requirement scorecard ---------------------------------------------- */

static void put_score_row(tb_buf *b, const state_t *st, const char *label)
{
    const state_probe *p = state_latest_probe(st, label);
    tb_printf(b, "| `%s` | ", label);
    if (!p) {
        tb_puts(b, "missing | - | - | 0 | - | - |\n");
        return;
    }
    tb_puts(b, p->passed ? "PASS | " : "FAIL | ");
    put_time(b, p->at_ms);
    tb_puts(b, " | ");
    put_duration(b, p->latency_ms);
    tb_printf(b, " | %d | ", state_probe_attempts(st, label));
    put_md(b, p->marker, "-");
    tb_puts(b, " | ");
    put_md(b, p->detail, "-");
    tb_puts(b, " |\n");
}

static void put_scorecard(tb_buf *b, const report_input *in)
{
    tb_puts(b, "## Requirement scorecard\n\n"
               "The latest attempt of each mandatory probe decides.\n\n"
               "| Probe | Status | Latest attempt | Latency | Attempts | Marker | Detail |\n"
               "|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < STATE_MANDATORY_PROBES; i++)
        put_score_row(b, in->st, state_mandatory_probes[i]);
    tb_puts(b, "\n");
}

/* ---- Interruption evidence ------------------------------------------------- */

static void put_time_item(tb_buf *b, const char *name, int64_t ms)
{
    tb_printf(b, "- %s: ", name);
    put_time(b, ms);
    tb_puts(b, "\n");
}

static void put_wifi(tb_buf *b, const state_wifi_evidence *w)
{
    tb_puts(b, "### Wi-Fi cycle\n\n");
    put_time_item(b, "WebSocket disconnect seen", w->disconnect_at_ms);
    put_time_item(b, "WebSocket reconnect seen", w->reconnect_at_ms);
    tb_puts(b, "- Outage (disconnect to reconnect): ");
    if (w->disconnect_at_ms > 0 && w->reconnect_at_ms >= w->disconnect_at_ms)
        put_duration(b, w->reconnect_at_ms - w->disconnect_at_ms);
    else
        tb_puts(b, NOT_RECORDED);
    tb_puts(b, "\n- Agent launch generation: ");
    if (w->generation > 0)
        tb_printf(b, "%d\n", w->generation);
    else
        tb_puts(b, NOT_RECORDED "\n");
    put_item(b, "Disconnect line", w->disconnect_line);
    put_item(b, "Reconnect line", w->reconnect_line);
    tb_puts(b, "\n");
}

static void put_sleep_method(tb_buf *b, const state_sleep_evidence *s)
{
    tb_puts(b, "- How the sleep is known: ");
    if (strcmp(s->method, "measured") == 0) {
        tb_puts(b, "measured by the suspend-aware clocks: the host slept ");
        if (s->slept_ms >= 0)
            put_duration(b, s->slept_ms);
        else
            tb_puts(b, "for an unknown time");
        tb_puts(b, "\n");
    } else if (strcmp(s->method, "operator") == 0) {
        tb_puts(b, "confirmed by the operator (`band-smoke confirm sleep-wake`) at ");
        put_time(b, s->confirmed_at_ms);
        tb_puts(b, "; not measured\n");
    } else {
        tb_puts(b, NOT_RECORDED "\n");
    }
}

static void put_sleep(tb_buf *b, const state_sleep_evidence *s)
{
    tb_puts(b, "### Host sleep/wake\n\n");
    put_sleep_method(b, s);
    tb_puts(b, "- Checkpoint snapshot: ");
    if (s->checkpoint.wall_ms > 0) {
        put_time(b, s->checkpoint.wall_ms);
        tb_printf(b, " (awake clock %lld ms, total clock %lld ms)\n",
                  (long long)s->checkpoint.awake_ms, (long long)s->checkpoint.total_ms);
    } else {
        tb_puts(b, NOT_RECORDED "\n");
    }
    put_item(b, "Sandbox status after wake", s->sandbox_status);
    tb_puts(b, "\n");
}

static void put_daemon(tb_buf *b, const state_daemon_evidence *d)
{
    tb_puts(b, "### Sandbox daemon restart\n\n");
    put_time_item(b, "Daemon stopped", d->stop_at_ms);
    put_time_item(b, "Daemon started", d->start_at_ms);
    put_item(b, "Sandbox status after restart", d->sandbox_status);
    put_item(b, "How the old agent ended", d->agent_exit);
    put_time_item(b, "Relaunched agent ready", d->ready_at_ms);
    tb_puts(b, "- Recovery (daemon stop to probe passed): ");
    if (d->recovery_ms > 0)
        put_duration(b, d->recovery_ms);
    else
        tb_puts(b, NOT_RECORDED);
    tb_puts(b, "\n\n");
}

static void put_interruptions(tb_buf *b, const report_input *in)
{
    const state_evidence *e = &in->st->evidence;
    tb_puts(b, "## Interruption evidence\n\n");
    put_wifi(b, &e->wifi);
    put_sleep(b, &e->sleep);
    put_daemon(b, &e->daemon_restart);
}

/* ---- Observed behavior ----------------------------------------------------- */

static void put_observed(tb_buf *b, const report_input *in)
{
    tb_puts(b, "## Observed behavior\n\n");
    for (size_t i = 0; i < NRESIDUAL; i++) {
        tb_printf(b, "- %s (`%s`): ", residual_checks[i].title, residual_checks[i].check);
        put_md(b, state_residual(in->st, residual_checks[i].check), NOT_RECORDED);
        tb_puts(b, "\n");
    }
    tb_puts(b, "\n");
}

/* ---- Timeline -------------------------------------------------------------- */

typedef struct tl_event {
    int64_t at_ms;
    int is_probe;
    int index; /* into st->phases or st->probes */
} tl_event;

/* Time, then phases before the probes they ran, then recording order:
 * a total order, so equal times still render the same bytes every time. */
static int tl_cmp(const void *pa, const void *pb)
{
    const tl_event *a = pa, *b = pb;
    if (a->at_ms != b->at_ms)
        return a->at_ms < b->at_ms ? -1 : 1;
    if (a->is_probe != b->is_probe)
        return a->is_probe - b->is_probe;
    return a->index - b->index;
}

static size_t tl_collect(const state_t *st, tl_event *ev)
{
    size_t n = 0;
    for (int i = 0; i < st->nphases; i++)
        ev[n++] = (tl_event){st->phases[i].at_ms, 0, i};
    for (int i = 0; i < st->nprobes; i++)
        ev[n++] = (tl_event){st->probes[i].at_ms, 1, i};
    qsort(ev, n, sizeof *ev, tl_cmp);
    return n;
}

static void put_tl_phase(tb_buf *b, const report_input *in, const state_phase_result *r)
{
    put_time(b, r->at_ms);
    tb_puts(b, " | Phase ");
    put_phase_ref(b, in, r->name);
    tb_printf(b, " | %s | ", state_result_name(r->status));
    put_duration(b, r->duration_ms);
    tb_puts(b, " | ");
    put_md(b, r->detail, "-");
    tb_puts(b, " |\n");
}

static void put_tl_probe(tb_buf *b, const state_t *st, int i)
{
    const state_probe *p = &st->probes[i];
    put_time(b, p->at_ms);
    tb_puts(b, " | Probe ");
    put_md(b, p->label, "(unlabelled)");
    tb_printf(b, ", attempt %d", attempt_number(st, i));
    if (p->generation > 0)
        tb_printf(b, ", agent generation %d", p->generation);
    tb_printf(b, " | %s | ", p->passed ? "passed" : "failed");
    put_duration(b, p->latency_ms);
    tb_puts(b, " | ");
    put_md(b, p->detail, "-");
    tb_puts(b, " |\n");
}

static void put_timeline_table(tb_buf *b, const report_input *in,
                               const tl_event *ev, size_t n)
{
    if (n == 0) {
        tb_puts(b, "Nothing has happened in this run yet.\n\n");
        return;
    }
    tb_puts(b, "| Time | Event | Result | Took | Detail |\n|---|---|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        tb_puts(b, "| ");
        if (ev[i].is_probe)
            put_tl_probe(b, in->st, ev[i].index);
        else
            put_tl_phase(b, in, &in->st->phases[ev[i].index]);
    }
    tb_puts(b, "\n");
}

/* What a chart bar shows. Every task name starts with its mark, and no
 * Mermaid keyword starts with one: Mermaid's lexer is case-insensitive and
 * would read a phase titled "Section 3" or "Title page" as a statement. */
typedef enum task_kind {
    TASK_PASSED,
    TASK_FAILED,
    TASK_SKIPPED,
    TASK_OUTAGE,
    TASK_RECOVERY
} task_kind;

static const struct {
    const char *mark;
    const char *tags;
} task_kinds[] = {
    [TASK_PASSED] = {"\xe2\x9c\x93", "done"},     /* U+2713 check mark */
    [TASK_FAILED] = {"\xe2\x9c\x97", "crit"},     /* U+2717 ballot x */
    [TASK_SKIPPED] = {"\xe2\x97\x8b", ""},        /* U+25CB white circle */
    [TASK_OUTAGE] = {"\xe2\x9a\xa0", "active"},   /* U+26A0 warning sign */
    [TASK_RECOVERY] = {"\xe2\x86\xbb", "done"},   /* U+21BB clockwise arrow */
};

/* One gantt task. dateFormat x: start and end are epoch milliseconds. A
 * task with no length is drawn as a milestone, which Mermaid shows. */
static void put_task(tb_buf *b, task_kind kind, const char *name, const char *fallback,
                     int64_t start, int64_t end)
{
    char *text = mermaid_text(name, fallback);
    if (!text)
        b->failed = 1;
    tb_printf(b, "    %s %s :", task_kinds[kind].mark, text ? text : "");
    free(text);
    if (end <= start) {
        end = start;
        tb_puts(b, "milestone, ");
    }
    if (*task_kinds[kind].tags)
        tb_printf(b, "%s, ", task_kinds[kind].tags);
    tb_printf(b, "%lld, %lld\n", (long long)start, (long long)end);
}

static void put_gantt_phases(tb_buf *b, const report_input *in,
                             const tl_event *ev, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const state_phase_result *r = &in->st->phases[ev[i].index];
        if (ev[i].is_probe || r->at_ms <= 0)
            continue;
        const report_phase *ph = report_phase_named(in, r->name);
        task_kind kind = r->status == RESULT_PASSED   ? TASK_PASSED
                         : r->status == RESULT_FAILED ? TASK_FAILED
                                                      : TASK_SKIPPED;
        int64_t took = r->duration_ms > 0 ? r->duration_ms : 0;
        put_task(b, kind, ph && ph->title ? ph->title : r->name, "Phase", r->at_ms,
                 r->at_ms + took);
    }
}

/* The host slept somewhere between the checkpoint and the first thing
 * recorded after it; that window is all a chart can honestly show. */
static int64_t first_event_after(const state_t *st, int64_t t)
{
    int64_t best = 0;
    for (int i = 0; i < st->nphases; i++)
        if (st->phases[i].at_ms > t && (!best || st->phases[i].at_ms < best))
            best = st->phases[i].at_ms;
    for (int i = 0; i < st->nprobes; i++)
        if (st->probes[i].at_ms > t && (!best || st->probes[i].at_ms < best))
            best = st->probes[i].at_ms;
    return best;
}

static void put_gantt_outages(tb_buf *b, const state_t *st)
{
    const state_evidence *e = &st->evidence;
    if (e->wifi.disconnect_at_ms > 0 && e->wifi.reconnect_at_ms >= e->wifi.disconnect_at_ms)
        put_task(b, TASK_OUTAGE, "Wi-Fi outage (WebSocket down)", NULL,
                 e->wifi.disconnect_at_ms, e->wifi.reconnect_at_ms);
    int64_t cp = e->sleep.checkpoint.wall_ms;
    int64_t woke = cp > 0 ? first_event_after(st, cp) : 0;
    if (woke > 0)
        put_task(b, TASK_OUTAGE, "Host sleep window (checkpoint to wake check)", NULL, cp, woke);
    const state_daemon_evidence *d = &e->daemon_restart;
    if (d->stop_at_ms > 0 && d->ready_at_ms >= d->stop_at_ms)
        put_task(b, TASK_OUTAGE, "Daemon stop to agent ready", NULL, d->stop_at_ms,
                 d->ready_at_ms);
    if (d->stop_at_ms > 0 && d->recovery_ms > 0)
        put_task(b, TASK_RECOVERY, "Recovery (daemon stop to probe passed)", NULL,
                 d->stop_at_ms, d->stop_at_ms + d->recovery_ms);
}

static void put_gantt_probes(tb_buf *b, const state_t *st)
{
    for (int i = 0; i < st->nprobes; i++) {
        const state_probe *p = &st->probes[i];
        if (p->at_ms <= 0)
            continue;
        char name[48];
        snprintf(name, sizeof name, "Probe %.31s", p->label);
        put_task(b, p->passed ? TASK_PASSED : TASK_FAILED, name, "Probe", p->at_ms, p->at_ms);
    }
}

/* Appends "section <title>" and the tasks, or nothing when there are none:
 * an empty section only draws an empty band. Frees tasks. */
static void put_section(tb_buf *b, const char *title, tb_buf *tasks)
{
    char *text = tb_take(tasks);
    if (!text)
        b->failed = 1;
    else if (*text)
        tb_printf(b, "    section %s\n%s", title, text);
    free(text);
}

static void put_gantt(tb_buf *b, const report_input *in, const tl_event *ev, size_t n)
{
    tb_buf phases, outages, probes;
    tb_init(&phases);
    tb_init(&outages);
    tb_init(&probes);
    put_gantt_phases(&phases, in, ev, n);
    put_gantt_outages(&outages, in->st);
    put_gantt_probes(&probes, in->st);
    if (phases.failed || outages.failed || probes.failed)
        b->failed = 1;
    if (phases.len + outages.len + probes.len == 0) {
        tb_free(&phases);
        tb_free(&outages);
        tb_free(&probes);
        return;
    }
    /* Mermaid draws the axis in the viewer's local time; the table is UTC. */
    char *run = mermaid_text(in->st->run_id, "unknown");
    if (!run)
        b->failed = 1;
    tb_printf(b, "```mermaid\ngantt\n    title Run %s (axis in local time)\n"
                 "    dateFormat x\n    axisFormat %%H:%%M:%%S\n", run ? run : "");
    free(run);
    put_section(b, "Phases", &phases);
    put_section(b, "Interruptions", &outages);
    put_section(b, "Probes", &probes);
    tb_puts(b, "```\n\n");
}

static void put_timeline(tb_buf *b, const report_input *in)
{
    tl_event ev[STATE_MAX_PHASES + STATE_MAX_PROBES];
    size_t n = tl_collect(in->st, ev);
    tb_puts(b, "## Timeline\n\n");
    put_timeline_table(b, in, ev, n);
    put_gantt(b, in, ev, n);
}

/* ---- Follow-up ------------------------------------------------------------- */

#define RESUME_COMMAND "`ctest --test-dir build -R phase`"

/* A terminal run is never continued: its next step is a fresh run. */
static int put_next_step(tb_buf *b, const state_t *st)
{
    switch (st->phase) {
    case RUN_AWAITING_WIFI:
        tb_puts(b, "- The run waits at the Wi-Fi checkpoint: turn the host's Wi-Fi off, then on "
                   "again, then resume with " RESUME_COMMAND ".\n");
        return 1;
    case RUN_AWAITING_SLEEP:
        tb_puts(b, "- The run waits at the sleep/wake checkpoint: sleep the host for about a "
                   "minute, wake it, then resume with " RESUME_COMMAND ".\n");
        return 1;
    case RUN_COMPLETED:
        if (state_verdict_of(st) == VERDICT_PASS)
            return 0;
        tb_puts(b, "- The run completed without a PASS and will not be continued: fix what "
                   "failed, then " RESUME_COMMAND " starts a fresh run (this one is archived).\n");
        return 1;
    case RUN_FAILED:
        tb_puts(b, "- The run was recorded as failed and will not be continued: fix what "
                   "failed, then " RESUME_COMMAND " starts a fresh run (this one is archived).\n");
        return 1;
    default:
        tb_puts(b, "- Continue the run: " RESUME_COMMAND " runs the phases in order up to the "
                   "next human checkpoint.\n");
        return 1;
    }
}

static int put_missing_step(tb_buf *b, const report_input *in)
{
    if (count_missing(in->st) == 0)
        return 0;
    tb_puts(b, "- Mandatory probes still to run, each in its phase:");
    for (int i = 0, n = 0; i < STATE_MANDATORY_PROBES; i++) {
        const char *label = state_mandatory_probes[i];
        if (state_latest_probe(in->st, label))
            continue;
        const report_phase *ph = report_phase_for_probe(in, label);
        tb_printf(b, "%s `%s`", n++ ? "," : "", label);
        if (ph) {
            tb_puts(b, " (");
            put_md(b, ph->ctest_name, "(unnamed)");
            tb_puts(b, ")");
        }
    }
    tb_puts(b, ".\n");
    return 1;
}

/* `retry` adds the command that re-runs the phase, for a run that can
 * still be continued. */
static int put_retry_steps(tb_buf *b, const report_input *in, int retry)
{
    const state_t *st = in->st;
    int n = 0;
    for (int i = 0; i < st->nprobes; i++) {
        const char *label = st->probes[i].label;
        if (!first_of_label(st, i) || !latest_failed(st, label))
            continue;
        const report_phase *ph = report_phase_for_probe(in, label);
        tb_puts(b, "- Probe ");
        put_md(b, label, "(unlabelled)");
        tb_puts(b, " failed on its latest attempt: ");
        put_md(b, state_latest_probe(st, label)->detail, "no detail recorded");
        if (retry && ph) {
            tb_puts(b, ". Fix the cause and retry it with ");
            put_ctest_command(b, ph);
            tb_puts(b, "; the latest attempt counts");
        }
        tb_puts(b, ".\n");
        n++;
    }
    return n;
}

static int put_failed_phase_steps(tb_buf *b, const report_input *in, int retry)
{
    const state_t *st = in->st;
    int n = 0;
    for (int i = 0; i < st->nphases; i++) {
        const state_phase_result *r = &st->phases[i];
        if (!is_own_phase_failure(in, r))
            continue;
        const report_phase *ph = report_phase_named(in, r->name);
        tb_puts(b, "- Phase ");
        put_phase_ref(b, in, r->name);
        tb_puts(b, " failed: ");
        put_md(b, r->detail, "no detail recorded");
        if (retry && ph) {
            tb_puts(b, ". Fix the cause and re-run it with ");
            put_ctest_command(b, ph);
        }
        tb_puts(b, ".\n");
        n++;
    }
    return n;
}

/* One item about something the ended run may have left on Band: lead,
 * the id or name, tail. Nothing when value is empty. */
static int put_leftover(tb_buf *b, const char *lead, const char *value, const char *tail)
{
    if (!value[0])
        return 0;
    tb_puts(b, lead);
    put_md(b, value, "");
    tb_puts(b, tail);
    return 1;
}

#define UNREAPED_TAIL                                                                    \
    " is still recorded after the run ended, so it was not reaped: delete it on staging, " \
    "or let the next run's cleanup retry (the id carries over).\n"

/* A room title saved before its create was answered, with no id: Band may
 * hold the room, and only a listing can tell. */
static int put_unreaped_steps(tb_buf *b, const state_t *st)
{
    int n = put_leftover(b, "- Room ", st->room_id, UNREAPED_TAIL);
    n += put_leftover(b, "- Agent ", st->agent_id, UNREAPED_TAIL);
    if (!st->room_id[0])
        n += put_leftover(b, "- Band may still hold a room titled ", st->room_title,
                          ": its create was never answered, and no reap has shown it gone. "
                          "Delete it on staging, or let the next run's cleanup look for it "
                          "(the title carries over).\n");
    return n;
}

/* Each failed phase that kept diagnostics names its file. */
static int put_diagnostics_steps(tb_buf *b, const report_input *in)
{
    const state_t *st = in->st;
    int n = 0;
    for (int i = 0; i < st->nphases; i++) {
        const state_phase_result *r = &st->phases[i];
        if (r->status != RESULT_FAILED || !r->diagnostics[0])
            continue;
        tb_puts(b, "- Diagnostics of the failed phase ");
        put_phase_ref(b, in, r->name);
        tb_puts(b, " (the end of agent.log and `sbx policy log`, redacted) are in the state "
                   "folder: ");
        put_md(b, r->diagnostics, "");
        tb_puts(b, ".\n");
        n++;
    }
    return n;
}

static int put_residual_steps(tb_buf *b, const state_t *st)
{
    int n = 0;
    for (size_t i = 0; i < NRESIDUAL; i++) {
        const residual_check *rc = &residual_checks[i];
        const char *text = state_residual(st, rc->check);
        if ((text && *text) || state_probe_attempts(st, rc->probe) == 0)
            continue;
        tb_printf(b, "- Record the %s observation: `band-smoke record-observation %s "
                     "\"%s\"`.\n", rc->title, rc->check, rc->prompt);
        n++;
    }
    return n;
}

static void put_followup(tb_buf *b, const report_input *in)
{
    const state_t *st = in->st;
    int live = !state_is_terminal(st), n = 0;
    tb_puts(b, "## Follow-up\n\n");
    n += put_next_step(b, st);
    if (live)
        n += put_missing_step(b, in);
    n += put_retry_steps(b, in, live);
    n += put_failed_phase_steps(b, in, live);
    n += put_diagnostics_steps(b, in);
    if (live) {
        n += put_residual_steps(b, st);
    } else {
        n += put_unreaped_steps(b, st);
    }
    if (n == 0)
        tb_puts(b, "- Nothing left to do: every mandatory probe passed and every Band "
                   "resource was reaped.\n");
}

char *evidence_render(const report_input *in)
{
    tb_buf b;
    tb_init(&b);
    tb_puts(&b, "# Band sandbox staging smoke: evidence\n\n");
    put_result(&b, in);
    put_environment(&b, in);
    put_scorecard(&b, in);
    put_interruptions(&b, in);
    put_observed(&b, in);
    put_timeline(&b, in);
    put_followup(&b, in);
    return tb_take(&b);
}
