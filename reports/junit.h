/* junit: junit.xml, the machine report of one run, in the Ant/Surefire
 * JUnit shape CI systems read (c-stack.md section 3).
 *
 *   <testsuites name="band-smoke" tests failures errors time>
 *     <testsuite name="band-smoke" tests failures errors skipped time
 *                timestamp(started, UTC, no zone)>
 *       <properties> run_id verdict run_phase sbx_version sdk_version
 *                    suite_version sandbox_name </properties>
 *       <testcase classname="band-smoke.staging" name="phase.05.initial"
 *                 time="seconds">   one per phase, in the given order
 *
 * A testcase is empty when its phase passed; holds
 * <failure type="phase-failed"> with the detail when it failed;
 * <skipped message="gate reason"/> when it was gated; and
 * <skipped message="not run in this run"/> when the state has no result.
 * The attempts of the phase's probe, and a passed phase's detail, go into
 * its <system-out>. errors is always 0: a phase either passed, failed or
 * did not run; an unexpected problem is reported by the phase as a failure.
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

/* The whole junit.xml as malloc'd UTF-8 text (the caller frees it).
 * Deterministic in *in. NULL only when out of memory. */
char *junit_render(const report_input *in);

#endif
