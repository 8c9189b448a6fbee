#!/usr/bin/env bash
# bench-band.sh: the speed and memory numbers of the probe path, offline.
#
#   scripts/bench-band.sh [BUILD_DIR]        (default: build/ at the project root)
#
# Builds what it needs in BUILD_DIR (configures it first if it has never been;
# BENCH_NO_BUILD=1 uses it as it is), then runs on loopback, against the fake
# Band and the stand-in agent:
#   1. bench-probe -n $BENCH_PROBES (default 50): marker round trips in-process;
#   2. band-smoke's peak RSS: `bench-probe --prepare-state` holds a live run
#      (fake Band, agent and room provisioned, fake-agent running) while
#      `band-smoke phase initial --again` runs $BENCH_CLI_RUNS times (default
#      10) under `bench-probe --rusage` (getrusage of the one child);
#   3. bench-fake-load: 50 agents + 50 observers connected at once.
# and prints a summary table beside the targets. A missed target prints
# MISSED and does not fail the script; an error (a failed probe, a band-smoke
# run that did not pass, any load error, something left on the fake) does.
# Raw outputs stay in the folder printed at the end when something failed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$ROOT/build}
PROBES=${BENCH_PROBES:-50}
CLI_RUNS=${BENCH_CLI_RUNS:-10}
# A run state records at most 64 probe attempts (STATE_MAX_PROBES).
case "$CLI_RUNS" in
    '' | *[!0-9]*) echo "bench-band: BENCH_CLI_RUNS must be 1..60" >&2; exit 2 ;;
esac
if [ "$CLI_RUNS" -lt 1 ] || [ "$CLI_RUNS" -gt 60 ]; then
    echo "bench-band: BENCH_CLI_RUNS must be 1..60" >&2
    exit 2
fi
TARGET_RTT_MS=50
TARGET_RSS_KB=10240 # 10 MiB

# Loopback only: no proxy may catch 127.0.0.1, no staging setting may leak in.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
unset BAND_API_KEY_USER BAND_API_KEY BAND_REST_URL BAND_BASE_URL BAND_WS_URL SMOKE_STATE_DIR

WORK=$(mktemp -d "${TMPDIR:-/tmp}/band-smoke-bench-XXXXXX")
HOLDER=""
ERRORS=0

cleanup() {
    stop_holder
    if [ "$ERRORS" -eq 0 ]; then rm -rf "$WORK"; else echo "raw outputs: $WORK" >&2; fi
}

error() {
    echo "bench-band: ERROR: $*" >&2
    ERRORS=$((ERRORS + 1))
}

# SIGTERM to the one holder we started, by its pid; SIGKILL after 30 s.
stop_holder() {
    [ -n "$HOLDER" ] || return 0
    kill -TERM "$HOLDER" 2>/dev/null || true
    for _ in $(seq 300); do
        kill -0 "$HOLDER" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$HOLDER" 2>/dev/null || true
    local rc=0
    wait "$HOLDER" || rc=$?
    HOLDER=""
    [ "$rc" -eq 0 ] || error "bench-probe --prepare-state ended with $rc (see $WORK/holder.out)"
}
trap cleanup EXIT
trap 'echo "bench-band: interrupted" >&2; exit 130' INT TERM

# key=value from a bench output file; "NA" when absent.
val() {
    local v
    v=$(sed -n "s/^$1=//p" "$2" | head -n 1)
    echo "${v:-NA}"
}

build() {
    if [ "${BENCH_NO_BUILD:-0}" = 1 ]; then return 0; fi
    if [ ! -f "$BUILD/CMakeCache.txt" ]; then
        cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >"$WORK/configure.log"
    fi
    cmake --build "$BUILD" -j "$(nproc 2>/dev/null || echo 2)" \
        --target band-smoke fake-band fake-agent bench-probe bench-fake-load >"$WORK/build.log" 2>&1 ||
        { tail -n 30 "$WORK/build.log" >&2; echo "bench-band: build failed" >&2; exit 1; }
}

# ---- 1. probe round trips ----------------------------------------------------

bench_probe() {
    echo "== bench-probe -n $PROBES"
    "$BIN/bench-probe" -n "$PROBES" >"$WORK/probe.out" 2>"$WORK/probe.err" ||
        error "bench-probe failed (see $WORK/probe.err): $(tail -n 1 "$WORK/probe.err")"
    cat "$WORK/probe.out"
}

# ---- 2. band-smoke's peak RSS --------------------------------------------------

start_holder() {
    "$BIN/bench-probe" --prepare-state "$WORK/state" --hold-s 600 >"$WORK/holder.out" 2>&1 &
    HOLDER=$!
    for _ in $(seq 300); do
        grep -q '^bench-probe: ready' "$WORK/holder.out" && return 0
        kill -0 "$HOLDER" 2>/dev/null || break
        sleep 0.1
    done
    error "bench-probe --prepare-state never got ready: $(tail -n 3 "$WORK/holder.out")"
    stop_holder
    return 1
}

# One `band-smoke phase initial --again` with a clean environment: the
# settings come from the prepared env file, the key never from the env.
smoke_once() {
    env -i PATH="$PATH" HOME="${HOME:-/tmp}" TMPDIR="${TMPDIR:-/tmp}" \
        SMOKE_STATE_DIR="$WORK/state" SMOKE_ENV_FILE="$WORK/state/bench.env" \
        "$BIN/bench-probe" --rusage "$BUILD/band-smoke" phase initial --again
}

bench_cli_rss() {
    echo "== band-smoke phase initial --again x $CLI_RUNS, peak RSS"
    : >"$WORK/rss.txt"
    start_holder || return 0
    for i in $(seq "$CLI_RUNS"); do
        local out="$WORK/cli.$i.out" rc=0
        smoke_once >"$out" 2>&1 || rc=$?
        if [ "$rc" -ne 0 ] || ! grep -q '^PASSED phase.05.initial' "$out"; then
            error "band-smoke run $i exited $rc: $(grep -E 'FAILED|SKIPPED|ERROR' "$out" | head -n 1)"
        fi
        sed -n 's/^bench-probe: maxrss_kb=\([0-9]*\) .*sampled_anon_kb=\([0-9]*\) sampled_file_kb=\([0-9]*\)$/\1 \2 \3/p' \
            "$out" >>"$WORK/rss.txt"
    done
    stop_holder
    sort -n "$WORK/rss.txt" | awk '{printf "run rss_kb=%s anon_kb~%s file_kb~%s\n", $1, $2, $3}'
    local max
    max=$(sort -n "$WORK/rss.txt" | tail -n 1)
    {
        echo "cli_runs=$(wc -l <"$WORK/rss.txt")"
        echo "cli_peak_rss_kb=$(echo "$max" | awk '{print $1}')"
        echo "cli_peak_anon_kb=$(echo "$max" | awk '{print $2}')"
        echo "cli_peak_file_kb=$(echo "$max" | awk '{print $3}')"
    } >"$WORK/cli.out"
    cat "$WORK/cli.out"
}

# ---- 3. the fake under 100 clients ---------------------------------------------

bench_load() {
    echo "== bench-fake-load"
    "$BIN/bench-fake-load" >"$WORK/load.out" 2>"$WORK/load.err" ||
        error "bench-fake-load reported errors (see $WORK/load.out)"
    cat "$WORK/load.out"
}

# ---- the summary ---------------------------------------------------------------

# verdict VALUE OP LIMIT: "ok" or "MISSED" (awk: values may be decimals).
verdict() {
    if [ "$1" = NA ]; then echo "NO DATA"; return; fi
    awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN {
        ok = (op == "<") ? (v < l) : (v == l); print ok ? "ok" : "MISSED" }'
}

row() {
    printf '%-46s %-14s %-12s %s\n' "$1" "$2" "$3" "$4"
}

summary() {
    local p="$WORK/probe.out" c="$WORK/cli.out" l="$WORK/load.out"
    touch "$p" "$c" "$l"
    local rtt rss rss_mib want=100
    rtt=$(val rtt_median_ms "$p")
    rss=$(val cli_peak_rss_kb "$c")
    rss_mib=NA
    [ "$rss" = NA ] || rss_mib=$(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }')
    echo
    echo "== summary (loopback, fake Band, $(nproc 2>/dev/null || echo '?') cores)"
    row metric measured target verdict
    row "probes passed" "$(val probes_passed "$p")/$(val probes_run "$p")" "all" \
        "$(verdict "$(val probes_passed "$p")" = "$PROBES")"
    row "probe round trip median (ms)" "$rtt" "< $TARGET_RTT_MS" "$(verdict "$rtt" "<" "$TARGET_RTT_MS")"
    row "probe round trip p95 / p99 / max (ms)" \
        "$(val rtt_p95_ms "$p") / $(val rtt_p99_ms "$p") / $(val rtt_max_ms "$p")" "-" ""
    row "bench-probe peak RSS (KiB)" "$(val peak_rss_kb "$p")" "-" ""
    row "band-smoke peak RSS (MiB, max of $(val cli_runs "$c"))" "$rss_mib" "< 10" \
        "$(verdict "$rss" "<" "$TARGET_RSS_KB")"
    row "  of which anon / file-backed (KiB, sampled)" \
        "$(val cli_peak_anon_kb "$c") / $(val cli_peak_file_kb "$c")" "-" ""
    row "fake load: clients connected" "$(val clients_connected "$l")" "$want" \
        "$(verdict "$(val clients_connected "$l")" = "$want")"
    row "fake load: sockets open at the fake" "$(val fake_ws_at_barrier "$l")" "$want" \
        "$(verdict "$(val fake_ws_at_barrier "$l")" = "$want")"
    row "fake load: joins ok" "$(val joins_ok "$l")" "$want" "$(verdict "$(val joins_ok "$l")" = "$want")"
    row "fake load: messages delivered" "$(val messages_delivered "$l")" "50" \
        "$(verdict "$(val messages_delivered "$l")" = 50)"
    row "fake load: replies seen" "$(val replies_seen "$l")" "50" "$(verdict "$(val replies_seen "$l")" = 50)"
    row "fake load: errors" "$(val errors "$l")" "0" "$(verdict "$(val errors "$l")" = 0)"
    row "fake load: reply median / max (ms)" "$(val reply_median_ms "$l") / $(val reply_max_ms "$l")" "-" ""
    row "fake load: wall time (ms)" "$(val wall_ms "$l")" "-" ""
    local left=NA
    [ "$(val fake_live_agents "$l")" = NA ] || left=$(($(val fake_live_agents "$l") + $(val fake_live_rooms "$l")))
    row "fake load: left live agents / rooms" "$(val fake_live_agents "$l") / $(val fake_live_rooms "$l")" \
        "0 / 0" "$(verdict "$left" = 0)"
    row "fake load: fake-band peak RSS (KiB)" "$(val fake_peak_rss_kb "$l")" "-" ""
    echo
    if [ "$ERRORS" -eq 0 ]; then echo "bench-band: done, no errors"; else echo "bench-band: $ERRORS error(s)"; fi
}

build
BIN="$BUILD/tests/bin"
bench_probe
bench_cli_rss
bench_load
summary
[ "$ERRORS" -eq 0 ]
