#!/usr/bin/env bash
# Fuzzes the four parsers that read what others wrote: the run state loader,
# the Phoenix frame decoder, the REST envelope parser and the sbx ls/version
# parsers. Bounded: SECONDS_PER_TARGET each (default 60). Needs clang.
# Seeds each corpus from tests/data/fuzz-seeds/<target>/ and the test data.
# Prints executions, coverage and crashes per target; exits 1 on any crash.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SMOKE_FUZZ_BUILD:-$root/build-fuzz}
secs=${SECONDS_PER_TARGET:-60}

CC=clang cmake -S "$root" -B "$build" -DSMOKE_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(getconf _NPROCESSORS_ONLN)" \
  --target fuzz-state fuzz-phx_frame fuzz-envelope fuzz-sbx_ls >/dev/null || exit 1

seed() { # corpus folder for a target, seeded from the test data we keep
  local dir=$build/fuzz/corpus-$1; mkdir -p "$dir"
  # real inputs first: tests/data/fuzz-seeds/<target>/ (for the state
  # loader, state.json files written by rehearsal runs; without them the
  # fuzzer never gets past schema_version and coverage stays flat)
  cp "$root"/tests/data/fuzz-seeds/"$1"/* "$dir"/ 2>/dev/null
  case $1 in
    state)     find "$root/tests/data" -name '*.json' -exec cp {} "$dir"/ \; ;;
    envelope)  cp "$root"/tests/data/band/* "$dir"/ 2>/dev/null ;;
    sbx_ls)    cp "$root"/tests/data/sbx/* "$dir"/ 2>/dev/null ;;
    phx_frame) printf '["1","1","chat_room:x","phx_join",{}]' > "$dir/join" ;;
  esac
  echo "$dir"
}

crashes=0
for t in state phx_frame envelope sbx_ls; do
  corpus=$(seed "$t")
  log=$build/fuzz/$t.log
  (cd "$build/fuzz" && ASAN_OPTIONS=detect_leaks=1 "./fuzz-$t" -max_total_time="$secs" \
      -print_final_stats=1 "$corpus" >"$log" 2>&1)
  rc=$?
  execs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
  seeds=$(grep -m1 -o 'INITED cov: [0-9]*' "$log" | awk '{print $3}')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  if [ "$rc" -ne 0 ]; then crashes=$((crashes + 1)); fi
  printf '%-10s %10s executions in %ss, coverage %s (seeds alone: %s), %s\n' "$t" \
    "${execs:-?}" "$secs" "${cov:-?}" "${seeds:-?}" \
    "$([ "$rc" -eq 0 ] && echo '0 crashes' || echo "CRASH (see $log)")"
done
[ "$crashes" -eq 0 ]
