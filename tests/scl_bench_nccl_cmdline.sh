#!/usr/bin/env bash
# scl_bench_nccl_cmdline.sh STRATARUN TOOLS_DIR: an nccl-tests command line, unmodified, on 2
# ranks: all_reduce_perf (the link to scl-bench) -b 8 -e 128M -f 2 -g 1 -c 1 -R 1 -J out.json.
# -R 1 registers the buffers (scl-bench's --mode cma); out.json must be strict JSON holding every
# size from 8 B to 128 MiB, out of place and in place, every number finite or null, and no wrong
# value (tests/scl_bench_json_check.py). Where the kernel refuses cross-process reads
# (tests/cma_allowed.py), registration must fail saying so; the JSON is then checked on the same
# command line with -R 0.
set -uo pipefail
sr=$1 tools=$2
here=$(dirname "$0")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

register=1
if ! /usr/bin/python3 "$here/cma_allowed.py"; then
  "$sr" -n 2 --timeout 300 "$tools/all_reduce_perf" -b 8 -e 128M -f 2 -g 1 -c 1 -R 1 \
    -J out.json >out.txt 2>&1
  status=$?
  [ "$status" = 3 ] && grep -q "peers cannot read registered buffers" out.txt ||
    fail "-R 1 where the kernel refuses CMA: exit $status, $(head -c 300 out.txt)"
  register=0
fi

start=$(date +%s.%N)
"$sr" -n 2 --timeout 300 "$tools/all_reduce_perf" -b 8 -e 128M -f 2 -g 1 -c 1 -R "$register" \
  -J out.json >out.txt 2>&1
status=$?
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "all_reduce_perf -b 8 -e 128M -f 2 -g 1 -c 1 -R $register -J out.json: ${took} s"
[ "$status" = 0 ] || { cat out.txt; fail "all_reduce_perf exited $status"; }
grep -q "scl-bench allreduce .* check 1" out.txt || fail "no allreduce table with check 1"
grep -q "^# Out of bounds values : 0 OK" out.txt || fail "the footer does not report 0 wrong"
mode=zerocopy
[ "$register" = 1 ] && mode=cma
/usr/bin/python3 "$here/scl_bench_json_check.py" out.json --collective allreduce --ranks 2 \
  --sizes 8 134217728 2 --in-place --mode "$mode" --program all_reduce_perf --check-iters 1 ||
  fail "out.json"

[ "$failures" = 0 ] && echo "scl_bench_nccl_cmdline.sh: OK"
exit $((failures > 0))
