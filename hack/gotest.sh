#!/usr/bin/env bash
# Runs `go test "$@"` and, when it fails, ends with a summary of what failed:
# the failed tests and their own messages (file_test.go:N: ...). CI shows only
# the last lines of a run, and a failing integration test is otherwise buried
# under the in-process API server's shutdown log. The whole output stays in
# _output/test-logs for reading afterwards.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p _output/test-logs
log=_output/test-logs/$(date +%Y%m%d-%H%M%S)-$$.log
# Keep the last 20 runs' logs.
ls -1t _output/test-logs/*.log 2>/dev/null | tail -n +20 | xargs -r rm -f

go test "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
	echo
	echo "==== go test $* failed (exit $rc); full output in $log ===="
	# The failed tests, panics, build errors and each test's own messages, in order.
	grep -E -- '^\s*--- FAIL|^panic:|^FAIL|^\s+[A-Za-z0-9_]+_test\.go:[0-9]+: |\.go:[0-9]+:[0-9]+: |test timed out' "$log" | tail -n 80
fi
exit "$rc"
