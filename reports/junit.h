/* junit: junit.xml, the machine report of one run, in the Ant/Surefire
 * JUnit shape CI systems read (c-stack.md section 3).
 *
 *   <testsuites name="band-smoke" tests failures errors skipped time>
 *     <testsuite name="band-smoke run <run_id>" tests failures errors
 *                skipped time timestamp(started, UTC, no zone)>
 *       <properties> run_id verdict run_phase sbx_version sdk_version
 *                    suite_version sandbox_name </properties>
 *       <testcase classname="band-smoke.staging" name="phase.05.initial"
 *                 time="seconds">   one per phase, in the given order
 *       <testcase classname="band-smoke.staging" name="verdict">  the last
 *
 * Both levels carry the same totals, equal to the cases (the phases and
 * the verdict). The suite name carries the run id, so the files of several
 * runs merged together keep one suite per run.
 *
 * A phase's testcase is empty when its phase passed; holds
 * <failure type="phase-failed"> with the detail, then the phase's own
 * operator lines (state phases{}.output), when it failed; <skipped
 * message="gate reason"/> when it was gated; and <skipped message="not
 * run in this run"/> when the state has no result. The attempts of the
 * phase's probe, a passed phase's detail and a failed phase's own lines go
 * into its <system-out>. The verdict testcase passes on PASS, holds
 * <failure type="verdict-fail"> on FAIL and <skipped> on INCOMPLETE, with
 * the reason (failed probes and phases, probes never attempted) as its
 * message, so no JUnit tool shows a run that did not pass as green.
 * errors is always 0: a phase either passed, failed or did not run; an
 * unexpected problem is reported by the phase as a failure.
 *
 * The text is valid XML 1.0 in UTF-8: & < > " ' are escaped, characters
 * XML 1.0 forbids (0x00-0x08, 0x0B, 0x0C, 0x0E-0x1F, U+FFFE, U+FFFF) and
 * the discouraged DEL and C1 controls are dropped, invalid UTF-8 becomes
 * U+FFFD, and there is no CDATA (so no `]]>` trap).
 * tests/data/junit.xsd is the schema it is checked against.
 */
#ifndef SMOKE_JUNIT_H
#define SMOKE_JUNIT_H

#include "report.h"

#define JUNIT_SUITE_NAME "band-smoke"
#define JUNIT_CLASSNAME "band-smoke.staging"
#define JUNIT_VERDICT_CASE "verdict"

/* The whole junit.xml as malloc'd UTF-8 text (the caller frees it).
 * Deterministic in *in. NULL only when out of memory. */
char *junit_render(const report_input *in);

#endif
