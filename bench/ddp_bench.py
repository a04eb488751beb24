#!/usr/bin/python3
"""One DDP training iteration of a small transformer: time per iteration and the share of it
that communication adds, for one torch.distributed backend.

    build/tools/stratarun -n 2 /usr/bin/python3 bench/ddp_bench.py --store DIR \\
        --backend stratacl [--heap]

Prints CSV rows  library,metric,ranks,value,repeat  with metrics
  iter_ms     median time of a training step (forward, backward with DDP's bucketed
              allreduces overlapping it, optimizer step), slowest rank
  local_ms    the same step under model.no_sync(): no communication at all
  comm_share  1 - local_ms / iter_ms: the share of the step communication adds
  grad_mb     gradient bytes allreduced per step (MiB)
and checks that the ranks' parameters agree bitwise after the timed steps.

The model: token embedding, NLAYERS pre-norm transformer encoder layers (d_model 128, 4 heads,
feed-forward 512), a 1000-token vocabulary head; batch 8 x 32 tokens per rank; SGD. torch uses one thread
per rank, like every benchmark here.
"""
import argparse
import os
import statistics
import sys
import time
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

VOCAB, WIDTH, HEADS, NLAYERS, BATCH, SEQ = 1000, 128, 4, 2, 8, 32


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        layer = nn.TransformerEncoderLayer(WIDTH, HEADS, 4 * WIDTH, batch_first=True,
                                           norm_first=True, dropout=0.0)
        self.body = nn.TransformerEncoder(layer, NLAYERS)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens):
        return self.head(self.body(self.embed(tokens)))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="gloo", choices=["gloo", "stratacl"])
    p.add_argument("--heap", action="store_true", help="stratacl: tensors from StrataCL's heap")
    p.add_argument("--steps", type=int, default=20, help="timed steps (after 3 warm-up steps)")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--store", required=True, help="a fresh directory shared by the ranks")
    a = p.parse_args()
    if a.heap and a.backend != "stratacl":
        p.error("--heap needs --backend stratacl")
    label = "torch-" + a.backend + ("-heap" if a.heap else "")
    rank = int(os.environ["STRATACL_RANK"])
    n = int(os.environ["STRATACL_WORLD_SIZE"])
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    if a.backend == "stratacl":
        import stratacl.torch
        if a.heap:
            stratacl.torch.use_heap_allocator()
    dist.init_process_group(a.backend, init_method="file://" + os.path.join(a.store, "init"),
                            rank=rank, world_size=n)
    torch.manual_seed(0)
    model = DDP(Model())
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    data = torch.Generator().manual_seed(rank)
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ), generator=data)
    target = torch.randint(0, VOCAB, (BATCH, SEQ), generator=data)

    def step():
        loss = nn.functional.cross_entropy(model(tokens).flatten(0, 1), target.flatten())
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()

    def timed(local):
        times = []
        for i in range(3 + a.steps):
            dist.barrier()
            start = time.perf_counter()
            if local:
                with model.no_sync():
                    step()
            else:
                step()
            if i >= 3:
                times.append(time.perf_counter() - start)
        slowest = torch.tensor([statistics.median(times)], dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        return float(slowest[0]) * 1e3

    iter_ms = timed(local=False)
    # Bitwise agreement of the ranks after synchronised steps (before any local-only step).
    flat = torch.cat([q.detach().flatten() for q in model.parameters()])
    first = flat.clone()
    dist.broadcast(first, 0)
    wrong = torch.tensor([int((first != flat).sum())], dtype=torch.int64)
    dist.all_reduce(wrong)
    local_ms = timed(local=True)
    grad_mb = sum(q.numel() * q.element_size() for q in model.parameters()) / 2**20
    if rank == 0:
        for metric, value in (("iter_ms", iter_ms), ("local_ms", local_ms),
                              ("comm_share", 1 - local_ms / iter_ms), ("grad_mb", grad_mb)):
            print("%s,%s,%d,%.6g,%d" % (label, metric, n, value, a.repeat), flush=True)
        if int(wrong[0]):
            print("ddp_bench: %d parameters differ across ranks" % int(wrong[0]),
                  file=sys.stderr, flush=True)
    return 1 if int(wrong[0]) else 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    # Leave without destructors: torch 1.13's ProcessGroupGloo, destroyed with DDP's Reducer
    # while the GIL is held, joins a worker thread that waits for the GIL, and never returns.
    os._exit(code)
