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
FIELDS = ("vocab", "width", "layers", "heads", "seq", "batch", "experts", "topk", "expert_inter")


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=MODES, default="ddp")
    p.add_argument("--preset", choices=sorted(config.GPT_PRESETS), default="small")
    for field in FIELDS:
        p.add_argument("--" + field.replace("_", "-"), type=int, help=f"override the preset's {field}")
    p.add_argument("--bucket-mb", type=float, default=25.0, help="ddp: DDP's bucket_cap_mb")
    p.add_argument("--lr", type=float, default=1e-3, help="Adam's learning rate")
    trainer.common_args(p)
    a = p.parse_args(argv)
    trainer.check_args(p, a)
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
        ex = experts.exchange(comm.path, comm.subgroup(), cfg)
        moe = lambda i: experts.MoE(cfg, a.seed, i, comm.rank, comm.size, ex)  # noqa: E731
    model = gpt.GPT(cfg, a.seed, moe_factory=moe)
    local = [n for n, _ in model.named_parameters() if n.endswith((".w1", ".w2"))]
    DDP._set_params_and_buffers_to_ignore_for_model(model, local)
    ddp = DDP(model, process_group=comm.group, bucket_cap_mb=a.bucket_mb)
    replicated = [p for n, p in model.named_parameters() if n not in local]
    return ddp, torch.optim.Adam(model.parameters(), lr=a.lr), replicated, True, True


def train(a, path, gloo, rank, size):
    cfg = config.gpt_preset(a.preset, **{f: getattr(a, f) for f in FIELDS})
    comm = trainer.path_comm(path, gloo)
    model, opt, replicated, uses_ddp, data_parallel = build(a, cfg, comm)
    data_rank = comm.rank if data_parallel else 0

    def step(i, optimize):
        tokens, target = gpt.batch(cfg, a.seed, i, data_rank)

        def backward(loss):
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if a.mode == "zero3":
                model.finish_grads()

        return trainer.timed_phases(comm, lambda: gpt.loss_fn(model(tokens), target), backward,
                                    opt.step if optimize else None)

    tokens = cfg.batch * cfg.seq * (size if data_parallel else 1)
    return trainer.measure(step, comm, gloo, a, replicated, model.no_sync if uses_ddp else None,
                           data_parallel, tokens, "tokens")


if __name__ == "__main__":
    args = parse()
    trainer.main(args, "gpt-" + args.mode, train)
