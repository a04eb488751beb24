"""The top-k weights of a normal-mode combine (``combine(..., topk_weights=w)``), brought back
to their tokens and summed as x's rows are. A plan moves rows of one width and type, so the
weights (float32, num_topk wide) travel on a plan of their own, routed as the handle's
dispatch."""
from typing import TYPE_CHECKING

import torch

from .._torch import MoeBuffer
from .handle import Handle

if TYPE_CHECKING:
    from .buffer import Buffer


def weights_plan(buffer: "Buffer", h: Handle, columns: int) -> MoeBuffer:
    """The plan of `columns` float32 weights per row, for the handle's top-k, experts and
    tokens per rank (made at its first use, as every plan of the Buffer)."""
    return buffer._plan(columns, h._topk_idx.shape[1], h._num_experts, h._max_tokens,
                        torch.float32, False, torch.float32, False)


def combine_weights(buffer: "Buffer", h: Handle, w: torch.Tensor, queued: bool) -> torch.Tensor:
    """Sums the expert side's weight rows back to their tokens: a combine on weights_plan,
    routed as the handle's dispatch. That routing comes from one dispatch of that plan (zero
    rows, the handle's expert ids), made at the handle's first combine with weights."""
    plan = weights_plan(buffer, h, w.shape[1])
    routing = h._weights.get(w.shape[1])
    if routing is None:
        zeros = torch.zeros(h._topk_idx.shape[0], w.shape[1])
        routing = plan.dispatch(zeros, None, h._topk_idx, None, None, False)[6]
        if routing.num_recv_rows != w.shape[0]:
            raise RuntimeError("stratacl: the weights' routing delivered "
                               f"{routing.num_recv_rows} rows, not {w.shape[0]}")
        h._weights[w.shape[1]] = routing
    return plan.combine(routing, w, None, queued)
