#!/usr/bin/env bash
# cpu_gaps.sh CPU_GAPS: the machine probe reports one line per CPU it may use and a summary, sees
# the CPU taken away when another busy process shares it (the gaps it exists to count), and
# refuses bad arguments.
set -uo pipefail
gaps=$1
dir=$(mktemp -d)
competitor=
stop_competitor() {
  [ -n "$competitor" ] || return 0
  kill "$competitor" 2>/dev/null
  wait "$competitor" 2>/dev/null
  competitor=
}
trap 'stop_competitor; rm -rf "$dir"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Every CPU this process may use (its affinity, as cpu-gaps reads it), then the summary.
"$gaps" -t 1 >"$dir/all.out" 2>&1 || fail "cpu-gaps -t 1 exited $?: $(cat "$dir/all.out")"
cpus=$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')
[ "$(grep -c '^cpu [0-9]*: gaps' "$dir/all.out")" = "$cpus" ] ||
  fail "not one line for each of $cpus CPUs: $(cat "$dir/all.out")"
grep -Eq "^cpus $cpus seconds 1 gaps_over_1ms_per_s [0-9]+\.[0-9]+$" "$dir/all.out" ||
  fail "no summary line: $(cat "$dir/all.out")"

# A busy process on the same CPU takes it for a share of the time, in slices of milliseconds.
cpu=$(python3 -c 'import os; print(min(os.sched_getaffinity(0)))')
taskset -c "$cpu" bash -c 'while :; do :; done' &
competitor=$!
taskset -c "$cpu" "$gaps" -t 2 >"$dir/shared.out" 2>&1 || fail "cpu-gaps on a shared CPU exited $?"
stop_competitor
lost=$(awk '/^cpu [0-9]*: gaps/ { sub("%", "", $NF); print $NF }' "$dir/shared.out")
awk -v l="${lost:-0}" 'BEGIN { exit !(l >= 20) }' ||
  fail "a CPU shared with a busy process lost only ${lost:-?}% to gaps: $(cat "$dir/shared.out")"
# The gaps are counted too, not only their share (a time slice is 1-4 ms at HZ 1000-250, or
# shorter: any bin will do).
awk '/^cpu [0-9]*: gaps/ { n = $6 + $9 + $12 + $15 } END { exit !(n > 0) }' "$dir/shared.out" ||
  fail "no gap counted on a CPU shared with a busy process: $(cat "$dir/shared.out")"

for bad in "-t 0" "-t x" "-t" "--seconds 1"; do
  # shellcheck disable=SC2086  # the words are the arguments
  "$gaps" $bad >/dev/null 2>&1
  [ $? = 2 ] || fail "cpu-gaps $bad was not refused with exit status 2"
done

[ "$failures" = 0 ] && echo "cpu_gaps: all checks passed"
exit $((failures > 0))
