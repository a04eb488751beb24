"""DDP training on backend "stratacl" gives the parameters gloo gives.

A small transformer-style model (embedding, attention, MLP, layer norms) trains for STEPS steps
of SGD with momentum on rank-dependent data, three times in the same processes: with DDP on
StrataCL twice, and with DDP on a gloo group once. Every parameter of every rank is checked:
- StrataCL run to run: bitwise equal (its reductions run in rank order);
- StrataCL against gloo: bitwise on 2 ranks (a + b is b + a), else within float tolerance (gloo's
  ring sums in another order);
- every rank holds the same parameters (DDP's invariant).
Small buckets (bucket_cap_mb) make DDP overlap several allreduces with the backward pass.
"""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from common import Checks, init, leave

STEPS = 12
RANK, N = init("ddp")
GLOO = dist.new_group(backend="gloo")
checks = Checks("ddp_parity")


class Block(nn.Module):
    def __init__(self, width=64, heads=4):
        super().__init__()
        self.embed = nn.Embedding(100, width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm1 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
        self.norm2 = nn.LayerNorm(width)
        self.head = nn.Linear(width, 100)

    def forward(self, tokens):
        x = self.embed(tokens)
        x = self.norm1(x + self.attn(x, x, x, need_weights=False)[0])
        x = self.norm2(x + self.mlp(x))
        return self.head(x)


def train(group):
    torch.manual_seed(1234)  # the same initial model on every rank and in every run
    model = DDP(Block(), process_group=group, bucket_cap_mb=0.05)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = torch.Generator().manual_seed(99 + RANK)  # each rank its own batches
    for _ in range(STEPS):
        tokens = torch.randint(0, 100, (8, 16), generator=data)
        target = torch.randint(0, 100, (8, 16), generator=data)
        loss = nn.functional.cross_entropy(model(tokens).flatten(0, 1), target.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [p.detach().clone() for p in model.module.parameters()]


first = train(None)  # the default group: StrataCL
second = train(None)
gloo = train(GLOO)

for i, (a, b, g) in enumerate(zip(first, second, gloo)):
    checks.equal(a, b, f"parameter {i}: StrataCL run to run")
    if N == 2:
        checks.equal(a, g, f"parameter {i}: StrataCL vs gloo")
    else:
        checks.true(torch.allclose(a, g, rtol=1e-4, atol=1e-5),
                    f"parameter {i}: StrataCL vs gloo within tolerance "
                    f"(max diff {(a - g).abs().max().item():.3g})")
    everyone = [torch.empty_like(a) for _ in range(N)]
    dist.all_gather(everyone, a, group=GLOO)
    for r in range(N):
        checks.equal(everyone[r], a, f"parameter {i}: rank {r} holds the same values")
torch.manual_seed(1234)
initial = [p.detach() for p in Block().parameters()]
checks.true(all(not torch.equal(a, b) for a, b in zip(first, initial)),
            "training changed every parameter")

leave(checks)
