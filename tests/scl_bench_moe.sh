#!/usr/bin/env bash
# scl_bench_moe.sh STRATARUN SCL_BENCH: scl-bench moe end to end on small shapes: both layouts,
# bf16 rows, fp8 rows, bf16 quantised to fp8 in flight, uniform and Zipf routing, 2 and 3 ranks;
# every method's rows checked (exit 0 means none wrong), one CSV row per method, call and pass,
# and bad options refused with exit status 2.
set -uo pipefail
sr=$1 bench=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

run() {  # name ranks args...
  local name=$1 ranks=$2
  shift 2
  "$sr" -n "$ranks" --timeout 300 "$bench" moe --tokens 48 --hidden 512 --topk 4 --experts 12 \
    --iters 2 --warmup 1 --repeats 2 --layout both --csv "$dir/$name.csv" "$@" >"$dir/$name.out" 2>&1
  local status=$?
  [ "$status" = 0 ] || { cat "$dir/$name.out"; fail "$name exited $status"; return; }
  grep -q "every row checked: ok" "$dir/$name.out" || fail "$name: no 'every row checked: ok'"
  # 2 layouts x 4 methods x 2 calls x 2 passes, plus the header.
  local lines
  lines=$(wc -l <"$dir/$name.csv")
  [ "$lines" = 33 ] || fail "$name: $lines CSV lines, want 33"
  grep -q "x best-alltoallv" "$dir/$name.out" || fail "$name: no ratio column"
}
run bf16 2
run fp8 2 --x fp8 --out fp32
run quantised 3 --x bf16 --recv fp8 --routing zipf:1.2
run fp16-masked 3 --x fp16 --out fp16 --routing masked

"$sr" -n 2 --timeout 60 "$bench" moe --routing zipf:x >"$dir/bad.out" 2>&1
[ $? = 2 ] && grep -q "routing" "$dir/bad.out" || fail "a bad --routing: $(head -c 300 "$dir/bad.out")"
"$sr" -n 2 --timeout 60 "$bench" moe --experts 7 >"$dir/bad2.out" 2>&1
[ $? = 2 ] || fail "--experts 7 on 2 ranks was accepted"

[ "$failures" = 0 ] && echo "scl_bench_moe: ok" || exit 1
