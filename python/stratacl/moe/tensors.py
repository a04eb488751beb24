"""What the calls of both modes know about tensors: the expert-id and fp8 dtypes, the checks
every tensor argument goes through, element sizes, and per-expert count alignment."""
from typing import Any, List

import torch

#: The dtype of expert ids (DeepEP's ``deep_ep.topk_idx_t``).
topk_idx_t = torch.int64

_FP8 = getattr(torch, "float8_e4m3fn", None)  # newer torch; its bytes travel as uint8
_SCALE_BLOCK = 128  # fp8 rows carry one float32 scale per 128 columns


def _check_tensor(t: Any, name: str, dtype: torch.dtype, dim: int) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"stratacl: {name} must be a torch.Tensor, not {type(t).__name__}")
    if t.dtype != dtype or t.dim() != dim:
        raise ValueError(f"stratacl: {name} must be a {dim}-D {dtype} tensor, not "
                         f"{t.dim()}-D {t.dtype}")
    if t.device.type != "cpu":
        raise ValueError(f"stratacl: {name} must be a CPU tensor, not on {t.device}")
    return t.contiguous()


def _element_size(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def _aligned(counts: List[int], alignment: int) -> List[int]:
    return [(c + alignment - 1) // alignment * alignment for c in counts]
