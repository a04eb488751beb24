#!/usr/bin/python3
"""The trainers' autograd functions against single-process references, on 2 or more ranks and
every path: each distributed piece's outputs and gradients must match what one process computes
with the whole model and the whole batch (to float32 rounding: sums run in another order).

    build/tools/stratarun -n 2 /usr/bin/python3 tests/train/test_train_units.py
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "workloads", "train"))
import trainer  # noqa: E402  (puts workloads/ on the path)

import launch  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import config  # noqa: E402
import dlrm  # noqa: E402
import experts  # noqa: E402
import gpt  # noqa: E402
from zero3 import Zero3  # noqa: E402

failures = []


def close(what, got, want, rtol=1e-4, atol=1e-6):
    if got.shape != want.shape or not torch.allclose(got, want, rtol=rtol, atol=atol):
        diff = (got - want).abs().max().item() if got.shape == want.shape else "shape"
        failures.append(f"{what}: differs from the reference by {diff}")


def inputs(shape, seed, rank=None):
    g = torch.Generator().manual_seed(seed if rank is None else seed * 31 + rank)
    return torch.randn(shape, generator=g)


def tensor_parallel(comm, path):
    """CopyToParallel and ReduceFromParallel around a Megatron block: forward output, input
    gradient, and each rank's weight slices' gradients."""
    cfg = config.gpt_preset("tiny")
    x = inputs((2, cfg.seq, cfg.width), 1).requires_grad_()
    probe = inputs((2, cfg.seq, cfg.width), 2)
    ref = gpt.Block(cfg, 5, 0)
    (ref(x) * probe).sum().backward()
    want_x = x.grad.clone()
    x.grad = None
    block = gpt.Block(cfg, 5, 0, tp=comm)
    out = block(x)
    (out * probe).sum().backward()
    close(f"{path}: tp block output", out, ref(x))
    close(f"{path}: tp block input gradient", x.grad, want_x)
    split = {"qkv.0": 0, "qkv.1": 0, "qkv.2": 0, "proj": 1, "fc1": 0, "fc2": 1}
    wants = dict(ref.named_parameters())
    for name, p in block.named_parameters():  # split weights: their slice; the rest: whole
        want = wants[name].grad
        if name in split:
            want = want.chunk(comm.size, split[name])[comm.rank]
        close(f"{path}: tp {name} gradient", p.grad, want)


def moe(comm, path, one_rank=False):
    """Dispatch and Combine: a MoE layer's output, the gradients of its input, gate and local
    experts, against every expert computed in one process on every rank's tokens. one_rank:
    every token picks among the first experts (rank 0's, or as many as top-k needs), so the
    other ranks receive nothing yet take part."""
    cfg = config.gpt_preset("tiny")
    route = experts.route
    if one_rank:
        local = cfg.experts // comm.size
        experts.route = lambda h, gate, k: route(h, gate[:max(local, k)], k)
    tokens = cfg.batch * cfg.seq
    everyone = [inputs((tokens, cfg.width), 3, r) for r in range(comm.size)]
    probes = [inputs((tokens, cfg.width), 4, r) for r in range(comm.size)]
    ref = experts.MoE(cfg, 6, 0, 0, 1)
    whole = torch.cat(everyone).requires_grad_()
    want = ref(whole)
    (want * torch.cat(probes)).sum().backward()
    layer = experts.MoE(cfg, 6, 0, comm.rank, comm.size, experts.exchange(path, comm, cfg))
    x = everyone[comm.rank].clone().requires_grad_()
    out = layer(x)
    (out * probes[comm.rank]).sum().backward()
    mine = slice(comm.rank * tokens, (comm.rank + 1) * tokens)
    close(f"{path}: moe output", out, want[mine])
    close(f"{path}: moe input gradient", x.grad, whole.grad[mine])
    # Every weight's gradient is the mean over the ranks' losses, as DDP makes the gate's: the
    # reference's (of the sum of those losses) over the rank count.
    comm.all_reduce(layer.gate.grad)
    close(f"{path}: moe gate gradient", layer.gate.grad / comm.size, ref.gate.grad / comm.size)
    experts_here = slice(comm.rank * layer.local, (comm.rank + 1) * layer.local)
    for w, want in ((layer.w1, ref.w1), (layer.w2, ref.w2)):  # no gradient: no rows came
        got = torch.zeros_like(w) if w.grad is None else w.grad
        close(f"{path}: moe expert gradient", got, want.grad[experts_here] / comm.size)
    experts.route = route


def moe_one_rank(comm, path):
    moe(comm, path, one_rank=True)


def zero3(comm, path):
    """Zero3's gathered forward and reduce-scattered backward: the loss, and each shard's
    gradient against the slice of the mean of every rank's full gradient."""
    cfg = config.gpt_preset("tiny")
    ref = gpt.GPT(cfg, 7)
    batches = [gpt.batch(cfg, 7, 0, r) for r in range(comm.size)]
    losses = [gpt.loss_fn(ref(t), y) for t, y in batches]
    (sum(losses) / comm.size).backward()
    sharded = Zero3(gpt.GPT(cfg, 7), comm)
    for step in range(2):  # the second step runs on storage freed and re-gathered
        for p in sharded.parameters():
            p.grad = None
        loss = gpt.loss_fn(sharded(batches[comm.rank][0]), batches[comm.rank][1])
        loss.backward()
        sharded.finish_grads()
        close(f"{path}: zero3 loss (step {step})", loss.detach(), losses[comm.rank].detach())
        for i, (unit, module) in enumerate(zip(sharded.units, ref.units)):
            full = torch.cat([p.grad.flatten() for p in module.parameters()])
            per = unit.shard.numel()
            want = torch.nn.functional.pad(full, (0, per * comm.size - full.numel()))
            close(f"{path}: zero3 unit {i} shard gradient (step {step})", unit.shard.grad,
                  want[comm.rank * per:(comm.rank + 1) * per])


def embedding_exchange(comm, path):
    """The DLRM all-to-all, forward and backward: the loss on this rank's samples, and the
    gradients of its tables and of the MLPs (averaged over the ranks) against one process
    with every table and the whole batch."""
    cfg = config.DLRMConfig(rows=64, lookups=3, batch=8 * comm.size, bottom=(32, 16),
                            top=(32, 1), dim=16)
    ref = dlrm.DLRM(cfg, 8, 0, 1)
    dense, labels, indices = dlrm.batch(cfg, 8, 0, range(cfg.tables), 0, cfg.batch)
    model = dlrm.DLRM(cfg, 8, comm.rank, comm.size)
    order = [t for owned in model.owned for t in owned]
    pooled = ref.lookup(indices)[:, order]
    logits = ref.predict(ref.bottom(dense), pooled)
    dlrm.loss_fn(logits, labels).backward()
    ex = dlrm.EmbeddingExchange(model, comm)
    lo, hi = comm.rank * ex.local, (comm.rank + 1) * ex.local
    d, y, ix = dlrm.batch(cfg, 8, 0, model.mine, lo, hi)
    mine_pooled = model.lookup(ix)
    ex.start(mine_pooled).wait()
    loss = dlrm.loss_fn(model.predict(model.bottom(d), ex.received(mine_pooled)), y)
    loss.backward()
    ex.finish_backward()
    close(f"{path}: dlrm loss", loss.detach(), dlrm.loss_fn(logits[lo:hi], y).detach())
    for t, bag in zip(model.mine, model.tables):
        close(f"{path}: dlrm table {t} gradient", bag.weight.grad.to_dense(),
              ref.tables[t].weight.grad.to_dense())
    for mine, want in zip(list(model.bottom.parameters()) + list(model.top.parameters()),
                          list(ref.bottom.parameters()) + list(ref.top.parameters())):
        comm.all_reduce(mine.grad)
        close(f"{path}: dlrm MLP gradient", mine.grad / comm.size, want.grad)


def main():
    rank, size, gloo = trainer.init()
    for path in ("gloo", "buffered", "stratacl"):  # stratacl last: it turns the heap on
        comm = trainer.path_comm(path, gloo)
        for test in (tensor_parallel, moe, moe_one_rank, zero3, embedding_exchange):
            before = len(failures)
            test(comm, path)
            if rank == 0:
                print(f"{path}: {test.__name__}: {'ok' if len(failures) == before else 'FAILED'}",
                      flush=True)
    for f in failures:
        print(f"rank {rank}: {f}", file=sys.stderr, flush=True)
    verdict = torch.tensor([len(failures)])
    dist.all_reduce(verdict, group=gloo)
    launch.leave(1 if int(verdict[0]) else 0)


if __name__ == "__main__":
    main()
