#include "junit.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "textbuf.h"

/* XML 1.0 has no way to carry C0 controls (but tab and line breaks) or
 * U+FFFE/U+FFFF, not even as references; DEL and the C1 controls are legal
 * but discouraged, and no report text needs them. */
static int xml_char_allowed(uint32_t cp)
{
    if (cp < 0x20)
        return cp == '\t' || cp == '\n' || cp == '\r';
    return !(cp >= 0x7F && cp <= 0x9F) && cp != 0xFFFE && cp != 0xFFFF;
}

static void esc_text(tb_buf *b, uint32_t cp)
{
    switch (cp) {
    case '&': tb_puts(b, "&amp;"); break;
    case '<': tb_puts(b, "&lt;"); break;
    case '>': tb_puts(b, "&gt;"); break; /* so "]]>" can never appear */
    case '"': tb_puts(b, "&quot;"); break;
    case '\'': tb_puts(b, "&apos;"); break;
    case '\r': tb_puts(b, "&#13;"); break; /* a raw CR is normalised away */
    default:
        if (xml_char_allowed(cp))
            tb_put_cp(b, cp);
    }
}

/* Attribute values are whitespace-normalised by every parser: keep line
 * breaks and tabs as references so a message reads as it was recorded. */
static void esc_attr(tb_buf *b, uint32_t cp)
{
    if (cp == '\n')
        tb_puts(b, "&#10;");
    else if (cp == '\t')
        tb_puts(b, "&#9;");
    else
        esc_text(b, cp);
}

static void put_attr(tb_buf *b, const char *name, const char *value)
{
    tb_printf(b, " %s=\"", name);
    tb_put_text(b, value, esc_attr);
    tb_puts(b, "\"");
}

/* Plain "12.345": integer arithmetic, so no locale can turn it into "12,345". */
static void put_seconds(tb_buf *b, int64_t ms)
{
    if (ms < 0)
        ms = 0;
    tb_printf(b, "%lld.%03lld", (long long)(ms / 1000), (long long)(ms % 1000));
}

static const char *or_default(const char *s, const char *fallback)
{
    return s && *s ? s : fallback;
}

typedef struct junit_counts {
    size_t tests;
    size_t failures;
    size_t skipped;
    int64_t total_ms;
} junit_counts;

/* The phases, then the verdict testcase: the totals count every case. */
static junit_counts count_results(const report_input *in)
{
    junit_counts c = {in->nphases + 1, 0, 0, 0};
    state_verdict v = state_verdict_of(in->st);
    c.failures += v == VERDICT_FAIL;
    c.skipped += v == VERDICT_INCOMPLETE;
    for (size_t i = 0; i < in->nphases; i++) {
        const state_phase_result *r = state_phase(in->st, in->phases[i].name);
        state_result status = r ? r->status : RESULT_NONE;
        if (status == RESULT_FAILED)
            c.failures++;
        else if (status != RESULT_PASSED)
            c.skipped++;
        if (r && r->duration_ms > 0)
            c.total_ms += r->duration_ms;
    }
    return c;
}

static void put_totals(tb_buf *b, const junit_counts *c)
{
    tb_printf(b, " tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"%zu\" time=\"",
              c->tests, c->failures, c->skipped);
    put_seconds(b, c->total_ms);
    tb_puts(b, "\"");
}

static void put_suite_open(tb_buf *b, const report_input *in, const junit_counts *c)
{
    tb_puts(b, "<testsuites");
    put_attr(b, "name", JUNIT_SUITE_NAME);
    put_totals(b, c);
    tb_puts(b, ">\n  <testsuite name=\"" JUNIT_SUITE_NAME " run ");
    tb_put_text(b, in->st->run_id, esc_attr);
    tb_puts(b, "\"");
    put_totals(b, c);
    if (in->st->started_at_ms > 0) {
        /* The Ant schema wants local-style ISO 8601 without a zone; ours is
         * UTC, cut before the fraction and the Z. */
        char iso[CLOCK_ISO_SZ];
        clock_format_iso(in->st->started_at_ms, iso);
        iso[19] = '\0';
        put_attr(b, "timestamp", iso);
    }
    tb_puts(b, ">\n");
}

static void put_property(tb_buf *b, const char *name, const char *value)
{
    tb_puts(b, "      <property");
    put_attr(b, "name", name);
    put_attr(b, "value", value);
    tb_puts(b, "/>\n");
}

static void put_properties(tb_buf *b, const report_input *in)
{
    const state_t *st = in->st;
    tb_puts(b, "    <properties>\n");
    put_property(b, "run_id", st->run_id);
    put_property(b, "verdict", state_verdict_name(state_verdict_of(st)));
    put_property(b, "run_phase", state_run_phase_name(st->phase));
    put_property(b, "sbx_version", st->sbx_version);
    put_property(b, "sdk_version", st->sdk_version);
    put_property(b, "suite_version", or_default(in->suite_version, "unknown"));
    put_property(b, "sandbox_name", st->sandbox_name);
    tb_puts(b, "    </properties>\n");
}

static void put_probe_line(tb_buf *b, const state_probe *p, int attempt)
{
    char iso[CLOCK_ISO_SZ];
    tb_puts(b, "probe ");
    tb_put_text(b, p->label, esc_text);
    tb_printf(b, " attempt %d at %s: %s", attempt, clock_format_iso(p->at_ms, iso),
              p->passed ? "passed" : "failed");
    if (p->latency_ms >= 0) {
        char dur[CLOCK_DUR_SZ];
        tb_printf(b, "; latency %s", clock_format_duration(p->latency_ms, dur));
    }
    if (p->marker[0]) {
        tb_puts(b, "; marker ");
        tb_put_text(b, p->marker, esc_text);
    }
    if (p->generation > 0)
        tb_printf(b, "; agent generation %d", p->generation);
    if (p->detail[0]) {
        tb_puts(b, "; ");
        tb_put_text(b, p->detail, esc_text);
    }
    tb_puts(b, "\n");
}

/* What a reader of the CI log wants beside the verdict of one phase: its
 * own note when it passed, and every attempt of its probe. */
static int failed_with_lines(const state_phase_result *r)
{
    return r && r->status == RESULT_FAILED && r->output[0];
}

static int has_output(const report_input *in, const report_phase *ph,
                      const state_phase_result *r)
{
    if ((r && r->status == RESULT_PASSED && r->detail[0]) || failed_with_lines(r))
        return 1;
    return ph->probe_label && state_probe_attempts(in->st, ph->probe_label) > 0;
}

static void put_output(tb_buf *b, const report_input *in, const report_phase *ph,
                       const state_phase_result *r)
{
    tb_puts(b, "      <system-out>");
    if (r && r->status == RESULT_PASSED && r->detail[0]) {
        tb_put_text(b, r->detail, esc_text);
        tb_puts(b, "\n");
    }
    if (failed_with_lines(r))
        tb_put_text(b, r->output, esc_text);
    int attempt = 0;
    for (int i = 0; ph->probe_label && i < in->st->nprobes; i++) {
        const state_probe *p = &in->st->probes[i];
        if (strcmp(p->label, ph->probe_label) == 0)
            put_probe_line(b, p, ++attempt);
    }
    tb_puts(b, "</system-out>\n");
}

static void put_outcome(tb_buf *b, const state_phase_result *r)
{
    state_result status = r ? r->status : RESULT_NONE;
    if (status == RESULT_FAILED) {
        tb_puts(b, "      <failure");
        put_attr(b, "message", or_default(r->detail, "phase failed"));
        tb_puts(b, " type=\"phase-failed\">");
        tb_put_text(b, r->detail, esc_text);
        if (r->output[0]) {
            tb_puts(b, "\n\nThe phase's own lines:\n");
            tb_put_text(b, r->output, esc_text);
        }
        tb_puts(b, "</failure>\n");
    } else if (status == RESULT_SKIPPED) {
        tb_puts(b, "      <skipped");
        put_attr(b, "message", or_default(r->detail, "gated"));
        tb_puts(b, "/>\n");
    } else if (status != RESULT_PASSED) {
        tb_puts(b, "      <skipped message=\"not run in this run\"/>\n");
    }
}

static void put_testcase(tb_buf *b, const report_input *in, const report_phase *ph)
{
    const state_phase_result *r = state_phase(in->st, ph->name);
    tb_puts(b, "    <testcase");
    put_attr(b, "classname", JUNIT_CLASSNAME);
    put_attr(b, "name", ph->ctest_name);
    tb_puts(b, " time=\"");
    put_seconds(b, r ? r->duration_ms : 0);
    tb_puts(b, "\"");
    int out = has_output(in, ph, r);
    if (r && r->status == RESULT_PASSED && !out) {
        tb_puts(b, "/>\n");
        return;
    }
    tb_puts(b, ">\n");
    put_outcome(b, r);
    if (out)
        put_output(b, in, ph, r);
    tb_puts(b, "    </testcase>\n");
}

/* Why the verdict is not PASS, in one line: the latest failed probes, the
 * failed phases, the run marked failed, or the probes still missing. */
static void put_verdict_reason(tb_buf *b, const state_t *st, state_verdict v)
{
    const char *sep = "";
    tb_printf(b, "verdict %s: ", state_verdict_name(v));
    for (int i = 0; v == VERDICT_FAIL && i < st->nprobes; i++) {
        const state_probe *latest = state_latest_probe(st, st->probes[i].label);
        if (latest != &st->probes[i] || latest->passed)
            continue;
        tb_printf(b, "%sprobe ", sep);
        tb_put_text(b, latest->label, esc_attr);
        tb_puts(b, " failed");
        sep = "; ";
    }
    for (int i = 0; v == VERDICT_FAIL && i < st->nphases; i++) {
        if (st->phases[i].status != RESULT_FAILED)
            continue;
        tb_printf(b, "%sphase ", sep);
        tb_put_text(b, st->phases[i].name, esc_attr);
        tb_puts(b, " failed");
        sep = "; ";
    }
    if (v == VERDICT_FAIL && st->phase == RUN_FAILED) {
        tb_printf(b, "%sthe run was recorded as failed", sep);
        sep = "; ";
    }
    for (int i = 0; i < STATE_MANDATORY_PROBES; i++) {
        if (state_latest_probe(st, state_mandatory_probes[i]))
            continue;
        tb_printf(b, "%smandatory probe %s has no attempt", sep, state_mandatory_probes[i]);
        sep = "; ";
    }
}

/* The run's verdict as a case of its own, so that no JUnit tool shows a
 * FAIL or an INCOMPLETE run as green: passed on PASS, a failure on FAIL,
 * skipped with the reason on INCOMPLETE. */
static void put_verdict_case(tb_buf *b, const report_input *in)
{
    state_verdict v = state_verdict_of(in->st);
    tb_puts(b, "    <testcase");
    put_attr(b, "classname", JUNIT_CLASSNAME);
    put_attr(b, "name", JUNIT_VERDICT_CASE);
    tb_puts(b, " time=\"0.000\"");
    if (v == VERDICT_PASS) {
        tb_puts(b, "/>\n");
        return;
    }
    tb_buf why;
    tb_init(&why);
    put_verdict_reason(&why, in->st, v);
    char *reason = tb_take(&why);
    tb_printf(b, ">\n      <%s message=\"%s\"%s", v == VERDICT_FAIL ? "failure" : "skipped",
              reason ? reason : "", v == VERDICT_FAIL ? " type=\"verdict-fail\"/>\n" : "/>\n");
    free(reason);
    tb_puts(b, "    </testcase>\n");
}

char *junit_render(const report_input *in)
{
    tb_buf b;
    tb_init(&b);
    junit_counts c = count_results(in);
    tb_puts(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    put_suite_open(&b, in, &c);
    put_properties(&b, in);
    for (size_t i = 0; i < in->nphases; i++)
        put_testcase(&b, in, &in->phases[i]);
    put_verdict_case(&b, in);
    tb_puts(&b, "  </testsuite>\n</testsuites>\n");
    return tb_take(&b);
}
