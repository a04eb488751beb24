"""The trainers' shapes, as presets, and what every run shares.

`gpt` models are pre-norm decoders (attention, then an MLP, or a mixture of experts in `ep`
mode); `tiny` is for tests, `small` fits two cores with steps of a tenth of a second. `dlrm` is
DLRM's CPU benchmark configuration (embedding dimension 64, bottom MLP 512-512-64, top MLP
1024-1024-1024-1, dot interaction, 8 tables, 100 lookups per bag, mini-batch 2048, a million
rows per table) with its batch and table rows multiplied by a scale factor.
"""
import dataclasses
import zlib

import torch


@dataclasses.dataclass(frozen=True)
class GPTConfig:
    vocab: int
    width: int
    layers: int
    heads: int
    seq: int  # tokens per sequence
    batch: int  # sequences per rank per step (tp: per tensor-parallel group, every rank sees it)
    experts: int  # ep mode: routed experts per MoE layer, spread evenly over the ranks
    topk: int
    expert_inter: int  # ep mode: an expert's intermediate width


@dataclasses.dataclass(frozen=True)
class DLRMConfig:
    dense_features: int = 13  # Criteo's
    tables: int = 8
    dim: int = 64
    rows: int = 1_000_000
    lookups: int = 100  # indices pooled per bag
    bottom: tuple = (512, 512, 64)
    top: tuple = (1024, 1024, 1024, 1)
    batch: int = 2048  # global mini-batch

    def scaled(self, scale, lookups=None):
        """Batch and table rows times `scale` (at least one of each)."""
        return dataclasses.replace(self, rows=max(1, int(self.rows * scale)),
                                   batch=max(1, int(self.batch * scale)),
                                   lookups=lookups or self.lookups)


GPT_PRESETS = {
    "tiny": GPTConfig(vocab=256, width=64, layers=2, heads=4, seq=16, batch=2, experts=4,
                      topk=2, expert_inter=64),
    "small": GPTConfig(vocab=2048, width=256, layers=4, heads=8, seq=64, batch=4, experts=8,
                       topk=2, expert_inter=512),
}


def generator(seed, name):
    """A random generator for one named thing (a weight, a step's data): the same on every rank
    and for every rank count."""
    return torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(name.encode()))


def gpt_preset(name, **overrides):
    """A preset, with fields replaced (overrides whose value is None are ignored)."""
    return dataclasses.replace(GPT_PRESETS[name], **{k: v for k, v in overrides.items()
                                                       if v is not None})
