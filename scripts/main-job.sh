#!/usr/bin/env bash
# The main job: install what is missing, build, then sweep every collective on 4 ranks with
# every element checked, for heap (zero-copy) and malloc (staged) buffers; then MoE dispatch and
# combine on 4 ranks (DeepEP normal and low-latency shapes, bf16 and fp8 rows) beside the
# pack + alltoallv + unpack baseline, every row checked; then an allreduce on a stream beside a
# matrix multiply (overlap), every element checked; then the same collectives from PyTorch
# (torch.distributed, backend "stratacl", heap tensors) beside torch's gloo, the first call of
# every size checked; then the MoE serving engine (workloads/serve) under the same load on its
# three communication paths (stratacl, buffered, gloo), each printing vLLM's summary block.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh" "$root/build"
bin="$root/build/tools"
for mem in heap malloc; do
  echo "== scl-bench all, 4 ranks, --mem $mem =="
  "$bin/stratarun" -n 4 --timeout 900 "$bin/scl-bench" all -b 8 -e 64M -f 4 -c 1 --mem "$mem"
done
echo "== scl-bench moe, 4 ranks: token-major T=1024, expert-major T=128, H=7168, top-8 of 256 =="
for x in bf16 fp8; do
  "$bin/stratarun" -n 4 --timeout 900 "$bin/scl-bench" moe --layout token --tokens 1024 --x "$x" \
    --iters 5 --repeats 1
  # Expert-major receive buffers are [E_local, R*T_max, H] (470 MB a rank here): heap methods only.
  "$bin/stratarun" -n 4 --timeout 900 "$bin/scl-bench" moe --layout expert --tokens 128 --x "$x" \
    --iters 10 --repeats 1 --methods stratacl,alltoallv-heap
done
echo "== scl-bench overlap, 2 ranks: a 16 MiB allreduce on a stream beside a 256^3 multiply =="
"$bin/stratarun" -n 2 --timeout 900 "$bin/scl-bench" overlap --bytes 16M --matrix 256 --repeats 3
if ls "$root"/build/python/stratacl/_torch.*.so >/dev/null 2>&1; then
  echo "== torch.distributed, 4 ranks, 8 B - 4 MiB: backend stratacl (heap tensors), then gloo =="
  for backend in "stratacl --heap" gloo; do
    store=$(mktemp -d)
    # shellcheck disable=SC2086
    PYTHONPATH="$root/build/python" "$bin/stratarun" -n 4 --timeout 900 /usr/bin/python3 \
      "$root/bench/peers/torch_bench.py" --store "$store" -b 8 -e 4M -f 8 -n 20 -w 3 -c 1 \
      --backend $backend
    rm -rf "$store"
  done
  echo "== serving: an MoE model on 2 ranks (experts spread, attention data-parallel), 64"
  echo "   requests of 128 prompt and 32 output tokens at 8 req/s (Poisson), on each path =="
  for path in stratacl buffered gloo; do
    PYTHONPATH="$root/build/python" "$bin/stratarun" -n 2 --timeout 900 /usr/bin/python3 \
      "$root/workloads/serve/serve.py" --path "$path" --request-rate 8 --num-prompts 64 \
      --disable-tqdm
  done
fi
