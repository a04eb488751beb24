#!/usr/bin/env bash
# scl_bench_nccl_names.sh STRATARUN TOOLS_DIR BUILD_DIR: scl-bench under nccl-tests' program
# names. Every name (a link to scl-bench in the build tree) runs a tiny size range on 2 ranks
# and measures its own collective, every value checked; hypercube also on 4 ranks (two steps of
# recursive doubling, every type) and on 3 (not a power of 2: skipped, as nccl-tests does).
# Every nccl-tests option is accepted, short and long, the ignored ones noted; scl-bench's old
# -R N (repeats) is refused pointing at --repeats. The names install as links to scl-bench.
set -uo pipefail
sr=$1 tools=$2 build=$3
here=$(dirname "$0")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

declare -A collective=(
  [all_reduce_perf]=allreduce [all_gather_perf]=allgather [alltoall_perf]=alltoall
  [broadcast_perf]=broadcast [reduce_perf]=reduce [reduce_scatter_perf]=reducescatter
  [sendrecv_perf]=sendrecv [gather_perf]=gather [scatter_perf]=scatter
  [hypercube_perf]=hypercube)

for name in "${!collective[@]}"; do
  c=${collective[$name]}
  [ "$(readlink "$tools/$name")" = scl-bench ] || fail "$tools/$name is not a link to scl-bench"
  "$sr" -n 2 --timeout 120 "$tools/$name" -b 64 -e 4K -f 4 -n 2 -w 1 -c 1 -J "$dir/$name.json" \
    >"$dir/$name.out" 2>&1
  status=$?
  [ "$status" = 0 ] || { cat "$dir/$name.out"; fail "$name exited $status"; continue; }
  grep -q "^# scl-bench $c  ranks 2 " "$dir/$name.out" || fail "$name: no $c table"
  rows=$(grep -c "^ " "$dir/$name.out")
  [ "$rows" = 4 ] || fail "$name: $rows rows, want 4 (64 B to 4 KiB, x4)"
  in_place=()
  case "$c" in alltoall|gather|scatter|sendrecv) ;; *) in_place=(--in-place) ;; esac
  /usr/bin/python3 "$here/scl_bench_json_check.py" "$dir/$name.json" --collective "$c" \
    --ranks 2 --sizes 64 4096 4 --program "$name" "${in_place[@]}" >/dev/null ||
    fail "$name: $(/usr/bin/python3 "$here/scl_bench_json_check.py" "$dir/$name.json" \
      --collective "$c" --ranks 2 --sizes 64 4096 4 "${in_place[@]}")"
done

"$sr" -n 4 --timeout 120 "$tools/hypercube_perf" -b 1K -e 64K -f 8 -n 2 -w 1 -d all \
  >"$dir/hc4.out" 2>&1
status=$?
[ "$status" = 0 ] || { cat "$dir/hc4.out"; fail "hypercube_perf on 4 ranks exited $status"; }
[ "$(grep -c "^ " "$dir/hc4.out")" = 36 ] || fail "hypercube on 4 ranks: not 3 sizes x 12 types"
"$sr" -n 3 --timeout 120 "$tools/hypercube_perf" -b 1K -e 1K >"$dir/hc3.out" 2>&1
status=$?
[ "$status" = 0 ] && grep -q "3 ranks is not a power of 2, skipping" "$dir/hc3.out" ||
  fail "hypercube_perf on 3 ranks: exit $status, $(head -c 300 "$dir/hc3.out")"

# Every option of nccl-tests (src/common.cu's table), short and long.
short=(-t 1 -g 1 -b 1K -e 4K -i 1K -f 2 -n 3 -m 2 -w 1 -N 2 -p 1 -c 2 -o sum -d float -r 0
       -z 3 -y 0 -T 60 -G 0 -C 1 -S 1 -J "$dir/short.json" -a 1 -R 0 -x 0 -D 0 -V 16 -M 1
       -u 1 -I 1 -K 1)
long=(--nthreads=1 --ngpus=1 --minbytes=1K --maxbytes=4K --stepbytes=1K --stepfactor=2
      --iters=3 --agg_iters=2 --warmup_iters=1 --run_cycles=2 --parallel_init=1 --check=2
      --op=sum --datatype=float --root=0 --blocking=3 --stream_null=0 --timeout=60
      --cudagraph=0 --report_cputime=1 --report_timestamps=1 --output_file="$dir/long.json"
      --average=1 --local_register=0 --cta_policy=0 --device_implementation=0
      --device_cta_count=16 --memory=1 --unalign=1 --per_iter_timing=1 --per_iter_skip=1)
for form in short long; do
  if [ "$form" = short ]; then args=("${short[@]}"); else args=("${long[@]}"); fi
  "$sr" -n 2 --timeout 120 "$tools/all_reduce_perf" "${args[@]}" >"$dir/$form.out" 2>&1
  status=$?
  [ "$status" = 0 ] || { cat "$dir/$form.out"; fail "every option ($form forms): exit $status"; }
  for why in "each process initialises its one rank already" "no CUDA graphs" \
      "the times are the host's clock already" "no device-side implementation"; do
    grep -q "ignored: $why" "$dir/$form.out" || fail "$form forms: no note '$why'"
  done
  grep -q "i_p99 oop" "$dir/$form.out" || fail "$form forms: no per-iteration columns (-I 1)"
  grep -q "timestamp" "$dir/$form.out" || fail "$form forms: no timestamp column (-S 1)"
  grep -q "^# Host memory" "$dir/$form.out" || fail "$form forms: no memory line (-M 1)"
  # -N 2 passes over 1K, 2K, 4K: 6 rows, and -c 2 in the heading.
  [ "$(grep -c "^ " "$dir/$form.out")" = 6 ] || fail "$form forms: not 6 rows (-N 2)"
  grep -q "check 2" "$dir/$form.out" || fail "$form forms: heading lacks check 2"
  /usr/bin/python3 "$here/scl_bench_json_check.py" "$dir/$form.json" --collective allreduce \
    --ranks 2 --sizes 1024 4096 2 --in-place --check-iters 2 >/dev/null || fail "$form.json"
done

"$sr" -n 1 "$tools/scl-bench" allreduce -R 3 >"$dir/bad.out" 2>&1
[ $? = 2 ] && grep -q -- "--repeats" "$dir/bad.out" || fail "scl-bench -R 3 not refused for --repeats"
"$sr" -n 1 "$tools/scl-bench" allreduce -b 1K -e 1K -n 1 --repeats 3 >"$dir/rep.out" 2>&1
[ $? = 0 ] && grep -q "p99 oop" "$dir/rep.out" || fail "--repeats 3: no p99 columns"
"$tools/all_reduce_perf" -h >"$dir/help.out" 2>&1
grep -q "accepted and ignored" "$dir/help.out" || fail "all_reduce_perf -h lists no ignored options"

# Installed: the names are links to the installed scl-bench, and run.
if cmake --install "$build" --prefix "$dir/prefix" >"$dir/install.out" 2>&1; then
  for name in "${!collective[@]}"; do
    [ "$(readlink "$dir/prefix/bin/$name")" = scl-bench ] || fail "installed $name is not a link"
  done
  LD_LIBRARY_PATH="$dir/prefix/lib" "$dir/prefix/bin/stratarun" -n 2 \
    "$dir/prefix/bin/all_gather_perf" -b 1K -e 1K -n 1 >"$dir/installed.out" 2>&1 &&
    grep -q "^# scl-bench allgather " "$dir/installed.out" ||
    fail "installed all_gather_perf: $(head -c 300 "$dir/installed.out")"
else
  fail "cmake --install: $(tail -n 5 "$dir/install.out")"
fi

[ "$failures" = 0 ] && echo "scl_bench_nccl_names.sh: OK"
exit $((failures > 0))
