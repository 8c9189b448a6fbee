#!/usr/bin/env bash
# Runs the offline unit tests under valgrind (memcheck), once: every
# unit-NAME executable of an ordinary (not sanitized) build, leaks counted as
# errors. The fakes they start run natively; band-smoke processes the tests
# start run natively too (ASan + UBSan in CI covers those).
#
#   scripts/valgrind.sh [BUILD_DIR]        default build/
# Prints one line per test binary and a summary; exits 1 on any error.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" 2>/dev/null && pwd) || { echo "no build folder ${1:-$root/build}" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
[ -d "$build/tests/bin" ] || { echo "no unit tests in $build (build first)" >&2; exit 2; }

export SMOKE_TEST_BIN=$build/tests/bin SMOKE_FAKE_SBX_BIN=$build/tests/fake-sbx-bin BAND_SMOKE=$build/band-smoke
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY \
      BAND_API_KEY_USER BAND_REST_URL BAND_BASE_URL BAND_WS_URL

failed=0 total=0
for t in "$build"/tests/bin/unit-*; do
  name=$(basename "$t")
  total=$((total + 1))
  log=$build/valgrind-$name.log
  start=$(date +%s)
  # The verdict comes from the log's ERROR SUMMARY, not --error-exitcode:
  # valgrind gives that exit code to forked helpers too, and a test that
  # checks its helper's exit status would then fail for the wrong reason.
  # --child-silent-after-fork keeps those helpers out of the log.
  valgrind --leak-check=full --errors-for-leak-kinds=definite --child-silent-after-fork=yes \
           --track-fds=no --log-file="$log" "$t" >"$log.out" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ] && ! grep -q "ERROR SUMMARY: 0 errors" "$log"; then rc=99; fi
  secs=$(( $(date +%s) - start ))
  if [ "$rc" -eq 0 ]; then
    printf '%-22s clean (%ss)\n' "$name" "$secs"
  else
    failed=$((failed + 1))
    printf '%-22s %s (%ss) see %s\n' "$name" "$([ $rc -eq 99 ] && echo 'MEMORY ERRORS' || echo "FAILED rc=$rc")" "$secs" "$log"
  fi
done
echo "valgrind: $((total - failed)) of $total unit test binaries clean"
[ "$failed" -eq 0 ]
