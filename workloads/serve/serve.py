#!/usr/bin/python3
"""Serve a generated load with an expert-parallel MoE model, and report as vLLM's
benchmark_serving does. One process per rank:

    build/tools/stratarun -n 2 /usr/bin/python3 workloads/serve/serve.py --path stratacl \\
        --num-prompts 64 --request-rate 8

--path picks the MoE exchange (exchange.py): stratacl (heap tensors, stratacl.moe.Buffer),
buffered (packed all_to_all_single on a "stratacl" group over torch's own tensors) or gloo (the
same on torch's gloo). --check serves the same requests through all three, all sent at once, and
fails unless every generated token and every request's final hidden state agree bitwise.
"""
import argparse
import json
import math
import os
import sys
import time

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)),
                os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
import launch  # noqa: E402  (first: it gives BLAS its threads)
from bitwise import bits  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import config  # noqa: E402
import exchange  # noqa: E402
import loadgen  # noqa: E402
import metrics  # noqa: E402
from engine import Engine  # noqa: E402
from model import Model  # noqa: E402

PATHS = ("stratacl", "buffered", "gloo")


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--path", choices=PATHS, default="stratacl")
    p.add_argument("--check", action="store_true", help="every path, compared bitwise")
    p.add_argument("--preset", choices=sorted(config.PRESETS), default="tiny")
    p.add_argument("--layers", type=int, help="override the preset's layer count")
    p.add_argument("--dtype", choices=("auto", "bfloat16", "float32"), default="auto",
                   help="auto: bfloat16 where the CPU computes it natively")
    p.add_argument("--enable-two-batch-overlap", action="store_true",
                   help="two micro-batches, one computing while the other's dispatch or "
                   "combine is in flight")
    p.add_argument("--fp8-dispatch", action="store_true",
                   help="stratacl path: dispatched rows travel as fp8 e4m3, quantised in flight "
                   "by the library (a different result: not with --check)")
    p.add_argument("--max-num-seqs", type=int, default=config.EngineConfig.max_num_seqs)
    p.add_argument("--max-num-batched-tokens", type=int,
                   default=config.EngineConfig.max_num_batched_tokens)
    g = p.add_argument_group("load (vLLM benchmark_serving's flags)")
    g.add_argument("--num-prompts", type=int, default=64)
    g.add_argument("--random-input-len", type=int, default=128)
    g.add_argument("--random-output-len", type=int, default=32)
    g.add_argument("--random-range-ratio", type=float, default=0.0)
    g.add_argument("--request-rate", type=float, default=math.inf)
    g.add_argument("--burstiness", type=float, default=1.0)
    g.add_argument("--max-concurrency", type=int)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--warmup-prompts", type=int, default=4,
                   help="served, all at once, before the measured load (not reported)")
    g.add_argument("--metric-percentiles", default="99")
    g.add_argument("--goodput", nargs="*", default=[], metavar="KEY:MS",
                   help="SLOs, e.g. ttft:500 tpot:50")
    g.add_argument("--save-result", action="store_true")
    g.add_argument("--result-filename")
    g.add_argument("--disable-tqdm", action="store_true", help="no progress line")
    p.add_argument("--init-method", help="torch's; default env:// under torchrun, else a file "
                   "store named after stratarun's job in this host's temporary directory (hosts "
                   "that share no file system need tcp:// here, or torchrun)")
    a = p.parse_args(argv)
    a.percentiles = [float(x) for x in a.metric_percentiles.split(",")]
    a.slos = {k: float(v) for k, v in (s.split(":") for s in a.goodput)}
    if a.num_prompts < 1:
        p.error("--num-prompts must be at least 1")
    if any(k not in ("ttft", "tpot", "e2el") for k in a.slos):
        p.error("--goodput keys are ttft, tpot and e2el")
    if a.fp8_dispatch and (a.check or a.path != "stratacl"):
        p.error("--fp8-dispatch is the stratacl path's, and changes the result: not with --check")
    return a


def pick_dtype(name):
    if name != "auto":
        return getattr(torch, name)
    flags = open("/proc/cpuinfo").read()
    return torch.bfloat16 if ("avx512_bf16" in flags or "amx_bf16" in flags) else torch.float32


def run_path(path, a, cfg, ecfg, dtype, model, gloo, rank, size):
    if path == "stratacl":
        import stratacl.torch
        stratacl.torch.use_heap_allocator()  # activations, and so the MoE rows, in the heap
    overlap = a.enable_two_batch_overlap
    ex = exchange.make(path, cfg, ecfg, dtype, gloo, micro_batches=2 if overlap else 1,
                       fp8=a.fp8_dispatch)
    engine = Engine(model, ex, ecfg, gloo if path == "gloo" else dist.group.WORLD,
                    keep_hidden=a.check, overlap=overlap)
    workload = loadgen.make_requests(a.num_prompts, a.random_input_len, a.random_output_len,
                                     a.random_range_ratio, cfg.vocab, a.seed)
    rate = math.inf if a.check else a.request_rate
    sender = loadgen.Sender(loadgen.arrival_times(a.num_prompts, rate, a.burstiness, a.seed),
                            a.max_concurrency) if rank == 0 else None
    last = [0.0]

    def progress(done, total):
        if rank == 0 and not a.disable_tqdm and time.time() - last[0] > 10:
            last[0] = time.time()
            print(f"serve: {path}: {done}/{total} requests done", file=sys.stderr, flush=True)

    if a.warmup_prompts:
        warm = loadgen.make_requests(a.warmup_prompts, a.random_input_len, a.random_output_len,
                                     a.random_range_ratio, cfg.vocab, a.seed + 7)
        engine.serve(warm, loadgen.Sender([0.0] * len(warm)) if rank == 0 else None)
        engine.steps.clear()
        ex.comm_s = dict.fromkeys(ex.comm_s, 0.0)
    finished = engine.serve(workload, sender, progress)
    mine = {"requests": [{"id": r.id, "prompt_len": len(r.prompt), "output": r.output,
                          "token_times": r.token_times,
                          "hidden": r.hidden} for r in finished],
            "steps": engine.steps, "sent": sender.sent_times if sender else None,
            "duration": max(r.token_times[-1] for r in finished) if finished else 0.0}
    everyone = [None] * size
    dist.all_gather_object(everyone, mine, group=gloo)
    if rank != 0:
        return None
    res = collect(everyone, a, path)
    res.update(path=path, ranks=size, two_batch_overlap=overlap, fp8_dispatch=a.fp8_dispatch,
               preset=a.preset, dtype=str(dtype).split(".")[-1],
               num_prompts=a.num_prompts, request_rate=str(rate), burstiness=a.burstiness,
               max_concurrency=a.max_concurrency, random_input_len=a.random_input_len,
               random_output_len=a.random_output_len, seed=a.seed)
    return res


def collect(everyone, a, path):
    """Rank 0: vLLM's results from every rank's finished requests and steps, with the
    per-phase step times (rank 0's) and communication shares (the ranks' mean). Its
    "_records" are the requests, for --check."""
    sent = everyone[0]["sent"]
    records = sorted((r for e in everyone for r in e["requests"]), key=lambda r: r["id"])
    if [r["id"] for r in records] != list(range(a.num_prompts)):
        raise RuntimeError(f"{path}: requests lost or served twice")
    for r in records:
        r["sent"] = sent[r["id"]]
    res = metrics.compute(records, max(e["duration"] for e in everyone), a.percentiles, a.slos)
    res["comm_share"], res["step_ms"], res["steps"] = {}, {}, {}
    for phase in (exchange.PREFILL, exchange.DECODE):
        per_rank = [[s for s in e["steps"] if s[0] == phase] for e in everyone]
        if per_rank[0]:
            res["steps"][phase] = len(per_rank[0])
            res["step_ms"][phase] = 1000 * sum(s[1] for s in per_rank[0]) / len(per_rank[0])
            res["comm_share"][phase] = sum(sum(s[2] for s in st) / sum(s[1] for s in st)
                                           for st in per_rank) / len(everyone)
    res["_records"] = records
    return res


def check(results):
    """Every path's tokens and final hidden states against the first's, bitwise."""
    base = results[0]
    bad = []
    for res in results[1:]:
        for want, got in zip(base["_records"], res["_records"]):
            if want["output"] != got["output"]:
                bad.append(f"{res['path']}: request {want['id']}: tokens differ from "
                           f"{base['path']}'s")
            elif not torch.equal(bits(want["hidden"]), bits(got["hidden"])):
                diff = (want["hidden"].float() - got["hidden"].float()).abs().max().item()
                bad.append(f"{res['path']}: request {want['id']}: final hidden state differs "
                           f"from {base['path']}'s by up to {diff}")
    return bad


def main():
    a = parse()
    rank, size, gloo = launch.init(a.init_method, "serve")
    cfg = config.preset(a.preset, layers=a.layers)
    ecfg = config.EngineConfig(a.max_num_seqs, a.max_num_batched_tokens)
    dtype = pick_dtype(a.dtype)
    if a.fp8_dispatch and dtype != torch.bfloat16:
        sys.exit("serve: --fp8-dispatch quantises bfloat16 rows: use --dtype bfloat16")
    # The weights and the KV cache are made before the stratacl path turns the heap allocator
    # on (run_path): they never travel, and the heap is kept for what peers read. With --check
    # the stratacl path comes last, so the buffer-centric paths use torch's own tensors.
    paths = ("gloo", "buffered", "stratacl") if a.check else (a.path,)
    model = Model(cfg, a.seed, rank, size, dtype, kv_slots=ecfg.max_num_seqs)
    results = []
    for path in paths:
        res = run_path(path, a, cfg, ecfg, dtype, model, gloo, rank, size)
        if rank == 0:
            title = f"Serving Benchmark Result: {path}, {size} ranks"
            print(metrics.summary(res, a.percentiles, title), flush=True)
            results.append(res)
    status = 0
    if rank == 0 and a.check:
        bad = check(results)
        n = len(results[0]["_records"])
        if bad:
            print(f"check: FAILED: {len(bad)} differences; first: " + "; ".join(bad[:5]))
            status = 1
        else:
            print(f"check: {n} requests: generated tokens and final hidden states identical "
                  f"(bitwise) across {', '.join(paths)}")
    if rank == 0 and (a.save_result or a.result_filename):
        name = a.result_filename or f"serve-{a.path}-{a.request_rate}qps-{size}r.json"
        for res in results:
            res.pop("_records")
        with open(name, "w") as f:
            json.dump(results if a.check else results[0], f, indent=1)
    launch.leave(status)


if __name__ == "__main__":
    main()
