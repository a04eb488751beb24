#!/usr/bin/python3
"""Train a GPT-style decoder on synthetic tokens with one of four parallel modes, over one of
three communication paths, and report the iteration time and where it goes. One process per
rank:

    build/tools/stratarun -n 2 /usr/bin/python3 workloads/train/train_gpt.py --mode tp \\
        --path stratacl

Modes: ddp (torch's DistributedDataParallel, --bucket-mb), tp (Megatron tensor parallelism over
all ranks), zero3 (parameters sharded, gathered per unit with prefetch, gradients
reduce-scattered), ep (MoE layers, experts spread over the ranks, dispatch and combine inside
autograd; DDP for the rest). Paths: stratacl (heap tensors, zero copy), buffered (StrataCL over
torch's own tensors, staged), gloo. --check trains on all three and fails unless the loss curves
agree (bitwise on 2 ranks) and every rank holds the same replicated parameters.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trainer  # noqa: E402  (first: it pins BLAS threads)

import torch  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import config  # noqa: E402
import experts  # noqa: E402
import gpt  # noqa: E402
from zero3 import Zero3  # noqa: E402

MODES = ("ddp", "tp", "zero3", "ep")


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=MODES, default="ddp")
    p.add_argument("--path", choices=trainer.PATHS, default="stratacl")
    p.add_argument("--check", action="store_true", help="every path; loss curves compared")
    p.add_argument("--preset", choices=sorted(config.GPT_PRESETS), default="small")
    for field in ("layers", "width", "heads", "seq", "batch", "experts", "topk"):
        p.add_argument("--" + field, type=int, help=f"override the preset's {field}")
    p.add_argument("--bucket-mb", type=float, default=25.0, help="ddp: DDP's bucket_cap_mb")
    p.add_argument("--lr", type=float, default=1e-3, help="Adam's learning rate")
    p.add_argument("--steps", type=int, default=20, help="timed steps")
    p.add_argument("--warmup", type=int, default=3, help="steps before the timed ones")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=1, help="written into the CSV rows")
    p.add_argument("--init-method", help="torch's; default: env:// under torchrun, else a file "
                   "store named after stratarun's job")
    a = p.parse_args(argv)
    if a.steps < 1 or a.warmup < 0:
        p.error("--steps must be positive and --warmup not negative")
    return a


def build(a, cfg, comm):
    """(model to call, optimizer, replicated parameters, uses DDP, data-parallel)."""
    if a.mode == "tp":
        model = gpt.GPT(cfg, a.seed, tp=comm)
        split = (".qkv.0", ".qkv.1", ".qkv.2", ".proj", ".fc1", ".fc2")
        replicated = [p for n, p in model.named_parameters() if not n.endswith(split)]
        return model, torch.optim.Adam(model.parameters(), lr=a.lr), replicated, False, False
    if a.mode == "zero3":
        model = Zero3(gpt.GPT(cfg, a.seed), comm)
        return model, torch.optim.Adam(model.parameters(), lr=a.lr), [], False, True
    moe = None
    if a.mode == "ep":
        ex = experts.exchange(comm.path, comm, cfg)
        moe = lambda i: experts.MoE(cfg, a.seed, i, comm.rank, comm.size, ex)  # noqa: E731
    model = gpt.GPT(cfg, a.seed, moe_factory=moe)
    local = [n for n, _ in model.named_parameters() if n.endswith((".w1", ".w2"))]
    DDP._set_params_and_buffers_to_ignore_for_model(model, local)
    ddp = DDP(model, process_group=comm.group, bucket_cap_mb=a.bucket_mb)
    replicated = [p for n, p in model.named_parameters() if n not in local]
    return ddp, torch.optim.Adam(model.parameters(), lr=a.lr), replicated, True, True


def train(a, cfg, path, gloo):
    comm = trainer.path_comm(path, gloo)
    model, opt, replicated, uses_ddp, data_parallel = build(a, cfg, comm)
    data_rank = comm.rank if data_parallel else 0

    def step(i, optimize=True):
        tokens, target = gpt.batch(cfg, a.seed, i, data_rank)
        phases = {}
        t0 = trainer.time.perf_counter()
        comm.phase = "forward"
        loss = gpt.loss_fn(model(tokens), target)
        t1 = trainer.time.perf_counter()
        comm.phase = "backward"
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if a.mode == "zero3":
            model.finish_grads()
        t2 = trainer.time.perf_counter()
        comm.phase = "optimizer"
        if optimize:
            opt.step()
        t3 = trainer.time.perf_counter()
        phases.update(forward=t1 - t0, backward=t2 - t1, optimizer=t3 - t2)
        return loss.item(), phases

    losses, records = trainer.run_steps(step, comm, a.warmup, a.steps)
    differ = trainer.replicas_differ(replicated, gloo)
    local = None
    if uses_ddp:  # the same steps without DDP's allreduces, and no updates: DDP's share
        with model.no_sync():
            _, local = trainer.run_steps(lambda i: step(i, optimize=False), comm, 1, a.steps,
                                         start=a.warmup)
    result = trainer.breakdown(records, local)
    names = list(result)
    result = dict(zip(names, trainer.slowest([result[n] for n in names], gloo)))
    tokens = cfg.batch * cfg.seq * (comm.size if data_parallel else 1)
    result["tokens_per_s"] = tokens / (result["iter_ms"] / 1e3)
    result["replicas_differ"] = differ
    curve = trainer.mean_losses(losses, gloo, data_parallel)
    return result, curve


def main():
    a = parse()
    rank, size, gloo = trainer.init(a.init_method)
    trainer.pin_threads()
    cfg = config.gpt_preset(a.preset, **{f: getattr(a, f) for f in
                                         ("layers", "width", "heads", "seq", "batch", "experts",
                                          "topk")})
    paths = ("gloo", "buffered", "stratacl") if a.check else (a.path,)
    curves, status = [], 0
    for path in paths:
        result, curve = train(a, cfg, path, gloo)
        curves.append((path, curve))
        trainer.emit(rank, ("gpt", a.mode, path, size, a.repeat), result)
        if rank == 0:
            print(f"gpt {a.mode} {path}: {result['iter_ms']:.1f} ms/iteration, exposed "
                  f"communication {100 * result['exposed_share']:.1f}%, loss {curve[0]:.4f} -> "
                  f"{curve[-1]:.4f}", file=sys.stderr, flush=True)
        if result["replicas_differ"]:
            print(f"gpt {a.mode} {path}: {int(result['replicas_differ'])} replicated parameter "
                  "elements differ across ranks", file=sys.stderr, flush=True)
            status = 1
    if a.check:
        bad = trainer.compare_curves(curves, exact=size <= 2, rtol=1e-4)
        if rank == 0:
            print("check: " + ("FAILED: " + "; ".join(bad) if bad else
                               f"{len(curves[0][1])} steps: loss curves "
                               f"{'identical (bitwise)' if size <= 2 else 'within 1e-4'} "
                               f"across {', '.join(paths)}"), flush=True)
        status = status or int(bool(bad))
    trainer.leave(status)


if __name__ == "__main__":
    main()
