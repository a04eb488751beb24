"""A GPT-style decoder, written so that one set of weights serves every parallel mode.

Pre-norm blocks: LayerNorm, causal multi-head attention, LayerNorm, then a GELU MLP, or in `ep`
mode a mixture of experts (experts.MoE). Linear layers have no bias. Every weight is drawn from
the seed and its name, full size, so a tensor-parallel rank's slice is exactly the slice of the
single-process model's weight, whatever the rank count.

Tensor parallelism (`tp` = a comm.Comm): Megatron's layout. The query, key, value and first MLP
weights are split by output rows (column-parallel: each rank owns whole heads and a slice of
the MLP's width), the attention output and second MLP weights by input columns (row-parallel);
CopyToParallel and ReduceFromParallel go around each pair. Embedding, norms and head are
replicated: their inputs are equal on every rank, so are their gradients.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import config
from collectives import CopyToParallel, ReduceFromParallel


def weight(seed, name, shape, std):
    """A weight drawn from the seed and its name (normal, zero mean)."""
    return nn.Parameter(torch.randn(shape, generator=config.generator(seed, name)) * std)


def _part(w, rank, size, dim):
    return nn.Parameter(w.detach().chunk(size, dim)[rank].clone())


class Embed(nn.Module):
    def __init__(self, cfg, seed):
        super().__init__()
        self.tokens = weight(seed, "embed.tokens", (cfg.vocab, cfg.width), 0.02)
        self.positions = weight(seed, "embed.positions", (cfg.seq, cfg.width), 0.02)

    def forward(self, tokens):
        return F.embedding(tokens, self.tokens) + self.positions[:tokens.shape[1]]


class Head(nn.Module):
    def __init__(self, cfg, seed):
        super().__init__()
        self.norm = nn.LayerNorm(cfg.width)
        self.out = weight(seed, "head.out", (cfg.vocab, cfg.width), 0.02)

    def forward(self, x):
        return F.linear(self.norm(x), self.out)


class Block(nn.Module):
    def __init__(self, cfg, seed, index, tp=None, moe=None):
        super().__init__()
        rank, size = (tp.rank, tp.size) if tp else (0, 1)
        if cfg.heads % size or (4 * cfg.width) % size:
            raise ValueError(f"gpt: {size} tensor-parallel ranks must divide the {cfg.heads} "
                             f"heads and the MLP's width {4 * cfg.width}")
        d, std, name = cfg.width, 0.02, f"block{index}."
        out_std = std / math.sqrt(2 * cfg.layers)
        self.tp, self.heads, self.head_dim = tp, cfg.heads // size, cfg.width // cfg.heads
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.ParameterList(
            [_part(weight(seed, name + w, (d, d), std), rank, size, 0) for w in "qkv"])
        self.proj = _part(weight(seed, name + "proj", (d, d), out_std), rank, size, 1)
        self.moe = moe
        if moe is None:
            self.fc1 = _part(weight(seed, name + "fc1", (4 * d, d), std), rank, size, 0)
            self.fc2 = _part(weight(seed, name + "fc2", (d, 4 * d), out_std), rank, size, 1)

    def _in(self, x):
        return CopyToParallel.apply(x, self.tp) if self.tp else x

    def _out(self, x):
        return ReduceFromParallel.apply(x, self.tp) if self.tp else x

    def attention(self, x):
        b, s, _ = x.shape
        q, k, v = (F.linear(x, w).view(b, s, self.heads, self.head_dim).transpose(1, 2)
                   for w in self.qkv)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        causal = torch.ones(s, s, dtype=torch.bool).triu(1)
        att = scores.masked_fill(causal, float("-inf")).softmax(-1)
        return F.linear((att @ v).transpose(1, 2).reshape(b, s, -1), self.proj)

    def forward(self, x):
        x = x + self._out(self.attention(self._in(self.norm1(x))))
        h = self.norm2(x)
        if self.moe is not None:
            return x + self.moe(h.flatten(0, 1)).view_as(x)
        return x + self._out(F.linear(F.gelu(F.linear(self._in(h), self.fc1)), self.fc2))


class GPT(nn.Module):
    """units: the embedding, the blocks, the head, in order (what ZeRO-3 shards one by one)."""

    def __init__(self, cfg, seed, tp=None, moe_factory=None):
        super().__init__()
        blocks = [Block(cfg, seed, i, tp, moe_factory(i) if moe_factory else None)
                  for i in range(cfg.layers)]
        self.units = nn.ModuleList([Embed(cfg, seed), *blocks, Head(cfg, seed)])

    def forward(self, tokens):
        x = tokens
        for unit in self.units:
            x = unit(x)
        return x


def batch(cfg, seed, step, rank):
    """Synthetic sequences with something to learn: each counts t' = (t + c) mod vocab from a
    random start, with a stride c from 1 to 8 drawn per sequence, so the next token is one of 8
    from the first and certain from the second. (tokens, next tokens)."""
    g = torch.Generator().manual_seed(seed * 7919 + step * 104_729 + rank)
    c = torch.randint(1, 9, (cfg.batch, 1), generator=g)
    t = [torch.randint(0, cfg.vocab, (cfg.batch, 1), generator=g)]
    for _ in range(cfg.seq):
        t.append((t[-1] + c) % cfg.vocab)
    seq = torch.cat(t, 1)
    return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()


def loss_fn(logits, target):
    return F.cross_entropy(logits.flatten(0, 1), target.flatten())
