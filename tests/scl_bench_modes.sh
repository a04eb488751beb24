#!/usr/bin/env bash
# scl_bench_modes.sh STRATARUN SCL_BENCH: scl-bench in each memory regime on 2 ranks (every
# output element checked: exit status 0 means no wrong value), the mode recorded in the table,
# CSV and JSON, the memcpy bandwidth in all three, the registration cost reported in cma mode,
# and contradicting options refused.
set -uo pipefail
sr=$1 bench=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Where the kernel refuses cross-process reads (tests/cma_allowed.py), --mode cma must fail
# saying so instead of measuring something else.
modes="auto zerocopy staged cma"
if ! python3 "$(dirname "$0")/cma_allowed.py"; then
  modes="auto zerocopy staged"
  "$sr" -n 2 --timeout 300 "$bench" allreduce -b 1K -e 4K --mode cma >"$dir/cma.out" 2>&1
  status=$?
  [ "$status" = 3 ] && grep -q "peers cannot read registered buffers" "$dir/cma.out" ||
    fail "--mode cma where the kernel refuses CMA: exit $status, $(head -c 300 "$dir/cma.out")"
fi
for mode in $modes; do
  "$sr" -n 2 --timeout 300 "$bench" allreduce,allgather,alltoall,broadcast,reducescatter \
    -b 1K -e 4M -f 8 -n 2 -w 1 --repeats 2 --mode "$mode" --csv "$dir/$mode.csv" --json "$dir/$mode.json" \
    >"$dir/$mode.out" 2>&1
  status=$?
  [ "$status" = 0 ] || { cat "$dir/$mode.out"; fail "mode $mode exited $status"; continue; }
  want=$mode
  [ "$mode" = auto ] && want=zerocopy  # auto with the default --mem heap
  grep -q "mode $want " "$dir/$mode.out" || fail "mode $mode: table header lacks 'mode $want'"
  rows=$(awk -F, -v m="$want" '$8 == m' "$dir/$mode.csv" | wc -l)
  [ "$rows" -ge 20 ] || fail "mode $mode: $rows CSV rows with mode $want"
  grep -q "\"mode\": \"$want\"" "$dir/$mode.json" || fail "mode $mode: JSON lacks mode $want"
  # The memcpy bandwidth is measured after the rows, yet heads the files (nan: a sanitizer build).
  awk '/^ +[0-9]+ / { row = NR } /^# memcpy_gbs ([0-9]+\.[0-9]+|nan) / { m = NR }
       END { exit !(row > 0 && m > row) }' "$dir/$mode.out" ||
    fail "mode $mode: no memcpy line after the rows"
  grep -Eq "^# scl-bench .* memcpy_gbs=([1-9][0-9]*\.|0\.[0-9]*[1-9]|nan)" "$dir/$mode.csv" ||
    fail "mode $mode: CSV header lacks a measured memcpy_gbs"
  grep -Eq "\"memcpy_gbs\": ([1-9]|0\.[0-9]*[1-9]|null)" "$dir/$mode.json" || fail "mode $mode: JSON lacks memcpy_gbs"
done
if [[ " $modes " == *" cma "* ]]; then
  grep -q "sclCommRegister of .* first .* cached" "$dir/cma.out" || fail "cma: no registration cost line"
  grep -q "reg_first_us=" "$dir/cma.csv" || fail "cma: CSV header lacks the registration cost"
fi

"$sr" -n 1 "$bench" allreduce --mode zerocopy --mem malloc >"$dir/bad.out" 2>&1
[ $? = 2 ] && grep -q "needs --mem heap" "$dir/bad.out" || fail "--mode zerocopy --mem malloc accepted"
"$sr" -n 1 "$bench" allreduce --mode fast >"$dir/bad.out" 2>&1
[ $? = 2 ] && grep -q "unknown mode 'fast'" "$dir/bad.out" || fail "--mode fast accepted"

# scl-bench split: children of 3 ranks made, used and checked, destroyed; a bad option refused.
"$sr" -n 3 "$bench" split --repeats 3 >"$dir/split.out" 2>&1 &&
  grep -Eq "^split ranks=3 repeats=3: sclCommSplit [0-9.]+ ms median .*every child's sum checked: ok" \
    "$dir/split.out" || fail "split: $(tail -2 "$dir/split.out")"
# --keep: every child alive until the last is made, then destroyed.
"$sr" -n 3 "$bench" split --repeats 3 --keep >"$dir/split.out" 2>&1 &&
  grep -Eq "^split ranks=3 repeats=3 kept: .* [0-9.]+ MiB a child held together; sclCommDestroy [0-9.]+ ms median; every child's sum checked: ok" \
    "$dir/split.out" || fail "split --keep: $(tail -2 "$dir/split.out")"
"$sr" -n 1 "$bench" split --repeats 0 >"$dir/bad.out" 2>&1
[ $? = 2 ] && grep -q "usage: .*scl-bench split" "$dir/bad.out" || fail "split --repeats 0 accepted"

[ "$failures" = 0 ] && echo "scl_bench_modes.sh: OK"
exit $((failures > 0))
