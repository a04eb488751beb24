"""The routing a dispatch returns (DeepEP's ``handle``), which its combine takes back."""
from typing import TYPE_CHECKING, Any, Dict, Optional

import torch

from .._torch import MoeBuffer

if TYPE_CHECKING:
    from .buffer import Buffer


class Handle:
    """The routing of one dispatch (DeepEP's ``handle``), opaque: pass it to the combine of that
    dispatch, to cached dispatches (``dispatch(x, handle=...)``, the backward of a combine), or to
    ``low_latency_combine`` and ``get_next_low_latency_combine_buffer``. It belongs to the Buffer
    that made it. Properties: ``num_tokens`` (the tokens dispatched from this rank) and, once
    the dispatch is done, ``num_recv_tokens`` (normal mode: rows received here)."""

    def __init__(self, buffer: "Buffer", low_latency: bool, plan: MoeBuffer, routing: Any,
                 topk_idx: torch.Tensor, x_dtype: torch.dtype, use_fp8: bool,
                 out_dtype: torch.dtype, hidden: int, max_tokens: int,
                 num_experts: int) -> None:
        self._buffer, self._low_latency = buffer, low_latency
        self._plan, self._routing = plan, routing
        self._topk_idx = topk_idx  # this rank's expert ids (a copy): [num_tokens, k] int64
        self._x_dtype, self._use_fp8, self._out_dtype = x_dtype, use_fp8, out_dtype
        self._hidden, self._max_tokens, self._num_experts = hidden, max_tokens, num_experts
        self._ready = False  # the dispatch has finished: its row count is known
        self._weights: Dict[int, Any] = {}  # weight columns -> routing of the weights plan
        self._combine_buffer: Optional[torch.Tensor] = None

    @property
    def num_tokens(self) -> int:
        return int(self._routing.num_tokens)

    @property
    def num_recv_tokens(self) -> int:
        if not self._ready:
            raise RuntimeError("stratacl: the dispatch is still queued: wait for its event first")
        return int(self._routing.num_recv_rows)

    def __repr__(self) -> str:
        mode = "low-latency" if self._low_latency else "normal"
        return f"<stratacl.moe.Handle {mode}, {self.num_tokens} tokens>"
