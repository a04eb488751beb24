"""The model's shape and the engine's limits, as presets.

`tiny` fits two cores with a run of minutes. `deepseek` keeps DeepSeek-V3's proportions (routed
experts of a fourth of the hidden width, top-8 routing, one shared expert, the first layers
dense, 128-wide heads) at a width a 16-core host serves; DeepSeek-V3 itself is hidden 7168, 61
layers, 256 experts, vocabulary 129280.
"""
import dataclasses


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    hidden: int
    layers: int
    dense_layers: int  # the first layers have a dense FFN, as in DeepSeek-V3
    heads: int
    head_dim: int
    vocab: int
    experts: int  # routed experts, spread evenly over the ranks
    topk: int
    expert_inter: int  # a routed expert's (and the shared expert's) intermediate width
    dense_inter: int
    max_len: int  # longest sequence a KV-cache slot holds (prompt + output)


@dataclasses.dataclass(frozen=True)
class EngineConfig:
    max_num_seqs: int = 32  # running sequences per rank
    max_num_batched_tokens: int = 256  # tokens per rank per step (chunked prefill cuts prompts)


PRESETS = {
    "tiny": ModelConfig(hidden=512, layers=4, dense_layers=1, heads=8, head_dim=64, vocab=4096,
                        experts=16, topk=4, expert_inter=256, dense_inter=1024, max_len=640),
    "deepseek": ModelConfig(hidden=1792, layers=8, dense_layers=1, heads=14, head_dim=128,
                            vocab=32768, experts=64, topk=8, expert_inter=512, dense_inter=4608,
                            max_len=2048),
}


def preset(name, **overrides):
    """A preset, with fields replaced (overrides whose value is None are ignored)."""
    return dataclasses.replace(PRESETS[name], **{k: v for k, v in overrides.items()
                                                   if v is not None})
