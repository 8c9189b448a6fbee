/* evidence: evidence.md, the human report of one run, in Markdown.
 *
 * Sections, in order: Result (verdict, run phase, what is missing or
 * failed), Environment, Requirement scorecard (one row per mandatory
 * probe), Interruption evidence (Wi-Fi, sleep/wake, daemon restart: what
 * the gates measured), Observed behavior (the residual checks), Timeline
 * (every phase result and probe attempt by time, then a Mermaid gantt
 * chart of the phases, the outage windows and the recovery) and Follow-up
 * (what to do next). GitHub and GitLab render the chart; the tables stay
 * the source of truth.
 *
 * Text from the state is redacted and escaped: in table cells and lists
 * `|` and Markdown punctuation are backslash-escaped and newlines become
 * spaces, control characters are dropped and invalid UTF-8 becomes U+FFFD.
 * Mermaid task names keep only ASCII letters and digits, `-._()/+,=@` and
 * non-ASCII text, so no `:`, `#`, `;` or `%` can end a name or open a
 * comment, and start with a status mark (U+2713 passed, U+2717 failed,
 * U+25CB skipped, U+26A0 outage, U+21BB recovery) that Mermaid never reads
 * as a keyword. The chart uses `dateFormat x` (epoch milliseconds); a
 * moment is drawn as a milestone.
 */
#ifndef SMOKE_EVIDENCE_H
#define SMOKE_EVIDENCE_H

#include "report.h"

/* The whole evidence.md as malloc'd UTF-8 text (the caller frees it).
 * Deterministic in *in. NULL only when out of memory. */
char *evidence_render(const report_input *in);

#endif
