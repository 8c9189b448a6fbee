#!/usr/bin/env bash
# Benchmark (not a test): is the run state crash-safe, and how fast is
# `band-smoke status`?
#
# Kills band-smoke with SIGKILL at random points while it saves the run state,
# N times, and after every kill checks that the state still reads. Then times
# `band-smoke status`. Prints numbers; exits 1 if any state was unreadable.
#
#   scripts/bench-state.sh [path/to/band-smoke]     N=300 by default
set -uo pipefail

bin=${1:-build/band-smoke}
n=${N:-300}
dir=$(mktemp -d "${TMPDIR:-/tmp}/band-smoke-bench-XXXXXX")
trap 'rm -rf "$dir"' EXIT
export SMOKE_STATE_DIR=$dir SMOKE_ENV_FILE=/dev/null

"$bin" phase start >/dev/null || { echo "cannot start a run with $bin" >&2; exit 1; }

unreadable=0 killed=0 finished=0
text=$(printf 'observation %.0s' $(seq 40))
# How long one uninterrupted save takes here (start, load, lock, write,
# fsync, rename), so the kills land anywhere inside it, and a bit after.
t0=$(date +%s%N); "$bin" record-observation sleep_wake "timing $text" >/dev/null
span_us=$(( ($(date +%s%N) - t0) / 1000 * 12 / 10 ))
for i in $(seq "$n"); do
  "$bin" record-observation sleep_wake "$i $text" >/dev/null 2>&1 &
  pid=$!
  delay_us=$(( (RANDOM * 32768 + RANDOM) % span_us ))
  sleep "$(printf '0.%06d' "$delay_us")"
  if kill -9 "$pid" 2>/dev/null; then killed=$((killed + 1)); fi
  wait "$pid" 2>/dev/null
  [ $? -eq 0 ] && finished=$((finished + 1))
  "$bin" status >/dev/null 2>&1 || { unreadable=$((unreadable + 1)); cp "$dir/state.json" "$dir/unreadable.$i" 2>/dev/null; }
done
leftovers=$(find "$dir" -maxdepth 1 -name '.state*' -o -maxdepth 1 -name '*.tmp*' | wc -l)

times=()
for i in $(seq 50); do
  t0=$(date +%s%N); "$bin" status >/dev/null; t1=$(date +%s%N)
  times+=($(( (t1 - t0) / 1000 )))
done
median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n '25p')

echo "state kill test: $n runs killed at random points of a ${span_us} us span: $killed killed mid-run, $finished finished, $unreadable unreadable afterwards, $leftovers temp files left"
echo "band-smoke status: median ${median} us over 50 runs"
[ "$unreadable" -eq 0 ]
