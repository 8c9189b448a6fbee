#!/usr/bin/env python3
"""junit.xml as two independent consumers read it (ctest junit.consumers).

1. xmllint validates each file against tests/data/junit.xsd.
2. junitparser (Debian's python3-junitparser, not our code) reads each
   file; its recount of the cases (update_statistics) must give exactly
   the totals the file states, on <testsuites> and on <testsuite>; the
   suite name carries the run id; the `verdict` case is the last one and
   passes, fails or is skipped as the verdict property says; a failed
   phase's <failure> carries more than its one-line message.
3. Merging the files of two runs keeps two suites and adds their totals,
   while merging a run with itself collapses into one suite (what would
   happen to every merge if suites were all named alike: the check can
   fail).

Usage: junit_check.py XSD JUNIT.xml... (at least two files of different
runs). Prints one line per check; exit 1 on the first failure.
"""
import copy
import subprocess
import sys

try:
    from junitparser import Failure, JUnitXml, Skipped
except ImportError:
    sys.exit("junit_check: junitparser is missing: apt-get install python3-junitparser "
             "(scripts/bootstrap.sh installs it)")

TOTALS = ("tests", "failures", "errors", "skipped")


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def ok(msg):
    print("ok   " + msg)


def schema_valid(xsd, path):
    res = subprocess.run(["xmllint", "--noout", "--schema", xsd, path],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        fail("%s is not valid against %s:\n%s" % (path, xsd, res.stderr))
    ok("%s validates against junit.xsd (xmllint)" % path)


def stated(elem):
    return {k: elem.tests if k == "tests" else getattr(elem, k) for k in TOTALS}


def recounted(elem):
    again = copy.deepcopy(elem)
    again.update_statistics()
    return stated(again), again.time


def check_totals(path, what, elem):
    want, time = recounted(elem)
    got = stated(elem)
    if got != want:
        fail("%s: %s states %s, its cases count %s" % (path, what, got, want))
    if abs((elem.time or 0) - time) > 0.0015:
        fail("%s: %s states time %s, its cases sum to %s" % (path, what, elem.time, time))


def properties(suite):
    return {p.name: p.value for p in suite.properties()}


def check_verdict(path, suite):
    cases = list(suite)
    last = cases[-1] if cases else None
    verdict = properties(suite).get("verdict")
    if last is None or last.name != "verdict":
        fail("%s: the last testcase is not the verdict" % path)
    kinds = [type(r) for r in last.result]
    want = {"PASS": [], "FAIL": [Failure], "INCOMPLETE": [Skipped]}.get(verdict)
    if kinds != want:
        fail("%s: verdict %s but the verdict case holds %s" % (path, verdict, kinds))
    for case in cases:
        for r in case.result:
            if isinstance(r, Failure) and case.name != "verdict":
                if not r.text or len(r.text.strip()) <= len(r.message or ""):
                    fail("%s: the failure of %s carries nothing beyond its message"
                         % (path, case.name))
    return verdict


def check_file(xsd, path):
    schema_valid(xsd, path)
    xml = JUnitXml.fromfile(path)
    suites = list(xml)
    if len(suites) != 1:
        fail("%s: %d suites, want 1 per run" % (path, len(suites)))
    suite = suites[0]
    run_id = properties(suite).get("run_id", "")
    if not run_id or run_id not in (suite.name or ""):
        fail("%s: the suite name %r does not carry the run id %r" % (path, suite.name, run_id))
    check_totals(path, "<testsuites>", xml)
    check_totals(path, "<testsuite>", suite)
    verdict = check_verdict(path, suite)
    ok("%s: junitparser counts tests=%d failures=%d errors=%d skipped=%d, as stated; "
       "suite %r; verdict %s" % (path, xml.tests, xml.failures, xml.errors, xml.skipped,
                                 suite.name, verdict))
    return xml, run_id


def check_merges(files):
    (a_path, a, a_run), (b_path, b, b_run) = files[0], files[1]
    if a_run == b_run:
        fail("%s and %s are the same run: give two runs" % (a_path, b_path))
    merged = JUnitXml.fromfile(a_path) + JUnitXml.fromfile(b_path)
    merged.update_statistics()
    names = [s.name for s in merged]
    want = {k: stated(a)[k] + stated(b)[k] for k in TOTALS}
    if len(names) != 2 or stated(merged) != want:
        fail("merging %s and %s: suites %s, totals %s, want 2 suites and %s"
             % (a_path, b_path, names, stated(merged), want))
    ok("merged two runs: %d suites %s, tests=%d failures=%d skipped=%d"
       % (len(names), names, merged.tests, merged.failures, merged.skipped))
    same = JUnitXml.fromfile(a_path) + JUnitXml.fromfile(a_path)
    if len(list(same)) != 1:
        fail("merging a run with itself kept %d suites: the merge check proves nothing"
             % len(list(same)))
    ok("a run merged with itself collapses into 1 suite, so distinct names are what keep "
       "runs apart")


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    xsd, paths = argv[1], argv[2:]
    files = []
    for path in paths:
        xml, run_id = check_file(xsd, path)
        files.append((path, xml, run_id))
    distinct = {}
    for f in files:
        distinct.setdefault(f[2], f)
    check_merges(list(distinct.values()))


if __name__ == "__main__":
    main(sys.argv)
