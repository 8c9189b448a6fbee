/* report: evidence.md and junit.xml, rendered from the run state alone.
 *
 * The two reports are pure functions of a report_input: the state, the
 * suite's phase table, the suite version and "now". Same input, same
 * bytes: the renderers read no clock, environment or file, so the
 * operator's report, the CI artifact and the golden files in the unit
 * tests all agree. Every piece of text taken from the state goes through
 * redact (via textbuf) before it is escaped for its target format. The
 * commands the reports suggest name the build folder `build`, as the
 * skill and the README do.
 *
 * The suite owns the phase table and passes it in: this module does not
 * know which phases exist, only how to show the results the state holds
 * for them. Phase results in the state are keyed by report_phase.name;
 * a result is read as "started at at_ms, took duration_ms".
 *
 *   report_input in = {st, phases, nphases, SMOKE_VERSION, clock_wall_ms(NULL)};
 *   char err[ERR_BUFSZ];
 *   if (report_write(&in, store.dir, err) != ERR_OK) ...
 *
 * The renderers themselves live in evidence.h (Markdown) and junit.h
 * (JUnit XML); this header is the entry point that writes both.
 */
#ifndef SMOKE_REPORT_H
#define SMOKE_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "state.h"

#define REPORT_EVIDENCE_FILE "evidence.md"
#define REPORT_JUNIT_FILE "junit.xml"

/* One staging phase as the suite registers it. Strings are borrowed; all
 * but probe_label must be set. */
typedef struct report_phase {
    const char *name;       /* short name, the key in state phases: "initial" */
    const char *ctest_name; /* "phase.05.initial" */
    const char *title;      /* "Initial probe" */
    const char *probe_label; /* probe this phase records ("initial",
                                "after-daemon-restart"), or NULL for none */
} report_phase;

/* Everything a report is made of. All pointers are borrowed for the call.
 * `st` must not be NULL; `phases` may be NULL when nphases is 0;
 * `suite_version` may be NULL (shown as not recorded). */
typedef struct report_input {
    const state_t *st;
    const report_phase *phases;
    size_t nphases;
    const char *suite_version;
    int64_t now_ms; /* the render time: "duration so far" is measured to it */
} report_input;

/* Renders both reports and writes dir/evidence.md and dir/junit.xml, each
 * atomically: a temp file in `dir`, fsync, rename, mode 0600. A reader sees
 * the old file or the new one, never half of one, and no temp file is left
 * behind on success or failure. `dir` must exist.
 * ERR_USAGE when in, in->st or dir is NULL or dir is too long for a path
 * (4095 bytes with the file name); ERR_NOMEM when rendering runs
 * out of memory (nothing is written then); ERR_IO naming the file when it
 * cannot be written (evidence.md may then be new while junit.xml is old). */
err_code report_write(const report_input *in, const char *dir, char *err);

/* The phase table entry that records probe `label`, or NULL. */
const report_phase *report_phase_for_probe(const report_input *in,
                                           const char *label);

/* The phase table entry named `name` (a state phase key), or NULL. */
const report_phase *report_phase_named(const report_input *in,
                                       const char *name);

#endif
