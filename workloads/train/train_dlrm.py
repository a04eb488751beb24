#!/usr/bin/python3
"""Train a DLRM-style recommender on random Criteo-shaped data, tables model-parallel and MLPs
data-parallel, over one of three communication paths, and report the iteration time and where
it goes. One process per rank:

    build/tools/stratarun -n 2 /usr/bin/python3 workloads/train/train_dlrm.py --path stratacl

The shape is DLRM's CPU benchmark configuration (config.DLRMConfig) with the global batch and
the table rows multiplied by --scale. --check trains on all three paths and fails unless the
loss curves agree (bitwise on 2 ranks) and every rank holds the same MLP weights.
"""
import argparse
import contextlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trainer  # noqa: E402  (first: it pins BLAS threads)

import torch  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import config  # noqa: E402
import dlrm  # noqa: E402


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=float, default=0.125,
                   help="global batch and table rows, as a fraction of DLRM's CPU benchmark "
                   "(2048 samples, a million rows per table)")
    p.add_argument("--lookups", type=int, help="indices per bag (DLRM's benchmark: 100)")
    p.add_argument("--lr", type=float, default=0.1, help="SGD's learning rate")
    trainer.common_args(p)
    a = p.parse_args(argv)
    trainer.check_args(p, a)
    if a.scale <= 0 or (a.lookups is not None and a.lookups < 1):
        p.error("--scale and --lookups must be positive")
    return a


def train(a, path, gloo, rank, size):
    cfg = config.DLRMConfig().scaled(a.scale, a.lookups)
    comm = trainer.path_comm(path, gloo)
    model = dlrm.DLRM(cfg, a.seed, rank, size)
    bottom = DDP(model.bottom, process_group=comm.group)
    top = DDP(model.top, process_group=comm.group)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    exchange = dlrm.EmbeddingExchange(model, comm)
    lo = rank * exchange.local

    def step(i, optimize):
        dense, labels, indices = dlrm.batch(cfg, a.seed, i, model.mine, lo, lo + exchange.local)

        def forward():
            pooled = model.lookup(indices)
            work = exchange.start(pooled)
            x = bottom(dense)  # while the embeddings travel
            work.wait()
            return dlrm.loss_fn(model.predict(x, exchange.received(pooled), top), labels)

        def backward(loss):
            opt.zero_grad(set_to_none=True)
            loss.backward()
            exchange.finish_backward()

        return trainer.timed_phases(comm, forward, backward, opt.step if optimize else None)

    def no_sync():
        stack = contextlib.ExitStack()
        stack.enter_context(bottom.no_sync())
        stack.enter_context(top.no_sync())
        return stack

    replicated = list(model.bottom.parameters()) + list(model.top.parameters())
    return trainer.measure(step, comm, gloo, a, replicated, no_sync, True, cfg.batch, "samples")


if __name__ == "__main__":
    trainer.main(parse(), "dlrm", train)
