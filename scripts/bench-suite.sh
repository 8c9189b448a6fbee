#!/usr/bin/env bash
# bench-suite.sh: how long the offline suite takes, and where the time goes.
#
#   scripts/bench-suite.sh [BUILD_DIR] [--asan [ASAN_DIR]] [--runs N] [-j N]
#                          [--cpu] [--no-plain]
#
# Runs `ctest -L offline -jJ` (default -j2) RUNS times (default 3) in BUILD_DIR
# (default build/), then prints, for that build:
#   - every run's wall time, the CPU time (user+sys) of ctest and the tests
#     it waited for, and the load average (uptime) before and after the run;
#   - the median wall time beside the target;
#   - the ten slowest tests, each with its median time over the runs
#     (ctest's own per-test wall time, read from --output-junit).
# --asan does the same in ASAN_DIR (default build-asan/) with the CI's
# sanitizer options. --cpu adds one serial pass that runs each test alone
# (`ctest -R ^NAME$`, NAME taken literally) and prints the ten with the most CPU time: CPU time is
# much less sensitive to other load on the machine than wall time, so it is
# the number to compare when the machine is shared. --no-plain skips
# BUILD_DIR (only the ASan figures).
#
# BENCH_KEEP=1 keeps the raw ctest logs and JUnit files.
#
# Nothing is built here: build first (scripts/bootstrap.sh). A missed target
# prints MISSED and does not fail the script; a failed test does (exit 1,
# after the figures), since a time measured over a broken suite means little.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
ASAN_DIR=""
RUNS=3
JOBS=2
CPU=0
PLAIN=1
TARGET_PLAIN_S=30
TARGET_ASAN_S=60

usage() {
    sed -n '3,4p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
        --asan)
            ASAN_DIR=$ROOT/build-asan
            if [ $# -gt 1 ] && [ "${2#-}" = "$2" ]; then ASAN_DIR=$2; shift; fi ;;
        --runs) [ $# -gt 1 ] || usage; RUNS=$2; shift ;;
        -j) [ $# -gt 1 ] || usage; JOBS=$2; shift ;;
        --cpu) CPU=1 ;;
        --no-plain) PLAIN=0 ;;
        -h|--help) usage ;;
        -*) usage ;;
        *) BUILD=$1 ;;
    esac
    shift
done
for n in "$RUNS" "$JOBS"; do
    case $n in '' | *[!0-9]* | 0) echo "bench-suite: --runs and -j take a number >= 1" >&2; exit 2 ;; esac
done

# Loopback only, as ctest's own test environment already ensures; a staging
# key in the caller's shell must not reach anything run from here.
unset BAND_API_KEY_USER BAND_API_KEY BAND_REST_URL BAND_BASE_URL BAND_WS_URL

WORK=$(mktemp -d "${TMPDIR:-/tmp}/band-smoke-bench-suite-XXXXXX")
# BENCH_KEEP=1 keeps the ctest logs and JUnit files (the folder is printed).
if [ "${BENCH_KEEP:-0}" = 1 ]; then
    trap 'echo "bench-suite: raw files in $WORK"' EXIT
else
    trap 'rm -rf "$WORK"' EXIT
fi
FAILED=0

load() { uptime | sed 's/.*load average[s]*: *//'; }

# junit file -> "seconds name" lines.
junit_times() {
    tr '>' '\n' <"$1" | sed -n 's/.*<testcase name="\([^"]*\)".* time="\([0-9.]*\)".*/\2 \1/p'
}

median() { sort -n | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]}'; }

# bench TITLE DIR TARGET_S [env K=V ...]
bench() {
    local title=$1 dir=$2 target=$3
    shift 3
    if [ ! -f "$dir/CTestTestfile.cmake" ]; then
        echo "bench-suite: $dir is not a configured build (run scripts/bootstrap.sh)" >&2
        exit 2
    fi
    local count
    count=$(ctest --test-dir "$dir" -N -L offline | sed -n 's/^Total Tests: *//p')
    echo "== $title: ctest -L offline -j$JOBS in $dir ($count tests, $RUNS runs)"
    local tag=${title// /_} i
    : >"$WORK/$tag.walls"
    for i in $(seq 1 "$RUNS"); do
        local before after rc=0 times
        before=$(load)
        local TIMEFORMAT='%R %U %S'
        { time env "$@" ctest --test-dir "$dir" -L offline -j"$JOBS" --timeout 900 \
              --output-junit "$WORK/$tag.$i.xml" >"$WORK/$tag.$i.log" 2>&1; } \
            2>"$WORK/$tag.$i.time" || rc=1
        times=$(tail -n 1 "$WORK/$tag.$i.time")
        after=$(load)
        local wall user sys
        read -r wall user sys <<<"$times"
        echo "$wall" >>"$WORK/$tag.walls"
        printf '  run %d: wall %6.1f s  cpu %6.1f s (user %.1f + sys %.1f)  load before [%s] after [%s]%s\n' \
            "$i" "$wall" "$(echo "$user + $sys" | bc)" "$user" "$sys" "$before" "$after" \
            "$([ $rc = 0 ] || echo '  FAILED')"
        if [ $rc != 0 ]; then
            FAILED=1
            grep -E '^\s+[0-9]+ - |tests failed' "$WORK/$tag.$i.log" | sed 's/^/    /' || true
        fi
    done
    local med verdict=ok
    med=$(median <"$WORK/$tag.walls")
    awk -v m="$med" -v t="$target" 'BEGIN {exit !(m > t)}' && verdict=MISSED
    printf '  median wall: %.1f s (target < %d s: %s)\n' "$med" "$target" "$verdict"
    echo "  ten slowest (median of the runs' ctest times):"
    for i in $(seq 1 "$RUNS"); do junit_times "$WORK/$tag.$i.xml"; done |
        awk '{t[$2] = t[$2] " " $1} END {for (n in t) print n t[n]}' |
        while read -r name rest; do
            printf '%s %s\n' "$(printf '%s\n' $rest | median)" "$name"
        done | sort -rn | head -n 10 |
        awk -v m="$med" '{printf "    %7.2f s  %4.0f%%  %s\n", $1, (m > 0 ? 100 * $1 / m : 0), $2}'
    # What -jJ could at best do with these tests: their sum over J. A
    # RESOURCE_LOCK serialises its tests, so a locked group's sum is a floor too.
    echo "  sum of the tests' times, run $RUNS, by first name part (a floor: sum / $JOBS):"
    junit_times "$WORK/$tag.$RUNS.xml" |
        awk '{split($2, p, "."); g[p[1]] += $1; all += $1}
             END {for (k in g) printf "    %7.1f s  %s.*\n", g[k], k; printf "    %7.1f s  all\n", all}' |
        sort -rn

    if [ "$CPU" = 1 ]; then
        echo "  one serial pass, each test alone: the ten with the most CPU (user+sys)"
        echo "    (load before [$(load)])"
        ctest --test-dir "$dir" -N -L offline | sed -n 's/^ *Test *#[0-9]*: *//p' >"$WORK/$tag.names"
        : >"$WORK/$tag.cpu"
        local name
        while read -r name; do
            local t w u s
            local TIMEFORMAT='%R %U %S'
            # the name as a literal: dots and the groups' `+` are regex
            local literal
            literal=$(printf '%s' "$name" | sed 's/[].+*?^$(){}|\\[]/\\&/g')
            { time env "$@" ctest --test-dir "$dir" -R "^${literal}\$" --timeout 900 \
                  >/dev/null 2>&1; } 2>"$WORK/one.time" || true
            t=$(tail -n 1 "$WORK/one.time")
            read -r w u s <<<"$t"
            echo "$(echo "$u + $s" | bc) $w $name" >>"$WORK/$tag.cpu"
        done <"$WORK/$tag.names"
        sort -rn "$WORK/$tag.cpu" | head -n 10 |
            awk '{printf "    cpu %6.2f s  wall %6.2f s  %s\n", $1, $2, $3}'
        awk '{c += $1; w += $2} END {printf "    all %d tests: cpu %.1f s, serial wall %.1f s\n", NR, c, w}' "$WORK/$tag.cpu"
        echo "    (load after [$(load)])"
    fi
}

echo "bench-suite: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo '?') cores, $(uname -sm)"
[ "$PLAIN" = 1 ] && bench "offline" "$BUILD" "$TARGET_PLAIN_S"
if [ -n "$ASAN_DIR" ]; then
    bench "offline ASan" "$ASAN_DIR" "$TARGET_ASAN_S" \
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
exit "$FAILED"
