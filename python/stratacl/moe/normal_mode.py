"""Buffer's normal-mode calls (DeepEP's get_dispatch_layout, dispatch, combine): a rank receives
one row per (source rank, token) with an expert here, ordered by source rank then token, and
combine sums the rows that come back per token."""
from typing import Any, Callable, List, Optional, Tuple, Union

import torch
import torch.distributed as dist

from .combine_weights import combine_weights, weights_plan
from .config import Config
from .events import EventOverlap, _Done
from .handle import Handle
from .tensors import _FP8, _aligned, _check_tensor, _element_size


class _NormalMode:
    """Normal mode's methods of Buffer (buffer.py), which alone inherits them and provides what
    they use: group, group_size, num_nvl_bytes, _plan, _own, _submitted and _wait_for."""

    def get_dispatch_layout(self, topk_idx: torch.Tensor, num_experts: int,
                            previous_event: Optional[EventOverlap] = None,
                            async_finish: bool = False, allocate_on_comm_stream: bool = False
                            ) -> Tuple[torch.Tensor, Optional[torch.Tensor], torch.Tensor,
                                       torch.Tensor, EventOverlap]:
        """What this rank will send (local, no communication).

        topk_idx: ``[num_tokens, num_topk]`` int64, expert ids, -1 for none. num_experts: E over
        all ranks, a multiple of the group size; expert e lives on rank
        ``e // (E // num_ranks)``. previous_event is waited for; async_finish and
        allocate_on_comm_stream have no effect (the layout is computed at once).

        Returns ``(num_tokens_per_rank, None, num_tokens_per_expert, is_token_in_rank, event)``:
        ``[num_ranks]`` int32, tokens with at least one expert on each rank; None (DeepEP's
        per-RDMA-rank counts, which StrataCL does not use); ``[num_experts]`` int32, entries
        naming each expert; ``[num_tokens, num_ranks]`` bool; a completed event."""
        self._wait_for(previous_event)
        topk_idx = _check_tensor(topk_idx, "topk_idx", torch.int64, 2)
        num_ranks = self.group_size
        if num_experts < 1 or num_experts % num_ranks:
            raise ValueError(f"stratacl: num_experts={num_experts} must be a positive multiple "
                             f"of the {num_ranks} ranks")
        if topk_idx.numel() and (topk_idx.min() < -1 or topk_idx.max() >= num_experts):
            raise ValueError(f"stratacl: topk_idx holds ids outside [-1, {num_experts})")
        valid = topk_idx >= 0
        ids = topk_idx[valid]
        num_tokens_per_expert = torch.bincount(ids, minlength=num_experts).to(torch.int32)
        is_token_in_rank = torch.zeros(topk_idx.shape[0], num_ranks, dtype=torch.bool)
        token = torch.arange(topk_idx.shape[0]).unsqueeze(1).expand_as(topk_idx)[valid]
        is_token_in_rank[token, ids // (num_experts // num_ranks)] = True
        num_tokens_per_rank = is_token_in_rank.sum(0, dtype=torch.int32)
        return (num_tokens_per_rank, None, num_tokens_per_expert, is_token_in_rank,
                EventOverlap(_Done()))

    def _normal_max_tokens(self, hidden: int, dtype: torch.dtype) -> int:
        hidden_bytes = hidden * max(_element_size(dtype), 2)
        return self.num_nvl_bytes // (self.group_size * hidden_bytes)

    def dispatch(self, x: Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]],
                 handle: Optional[Handle] = None,
                 num_tokens_per_rank: Optional[torch.Tensor] = None,
                 num_tokens_per_rdma_rank: Optional[torch.Tensor] = None,
                 is_token_in_rank: Optional[torch.Tensor] = None,
                 num_tokens_per_expert: Optional[torch.Tensor] = None,
                 topk_idx: Optional[torch.Tensor] = None,
                 topk_weights: Optional[torch.Tensor] = None,
                 expert_alignment: int = 1, num_worst_tokens: int = 0,
                 config: Optional[Config] = None,
                 previous_event: Optional[EventOverlap] = None, async_finish: bool = False,
                 allocate_on_comm_stream: bool = False, *, use_fp8: bool = False
                 ) -> Tuple[Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]],
                            Optional[torch.Tensor], Optional[torch.Tensor], Optional[List[int]],
                            Optional[Handle], EventOverlap]:
        """Sends each token to the ranks of its experts (normal mode).

        x: ``[num_tokens, hidden]`` bfloat16, float16 or float32, or fp8 e4m3 rows as a tuple
        ``([num_tokens, hidden]`` uint8 (or float8_e4m3fn), ``[num_tokens, hidden // 128]``
        float32 scales). num_tokens may differ between ranks; at most num_nvl_bytes //
        (num_ranks * hidden * max(element size, 2)).

        A new routing (handle None) takes, as DeepEP, num_tokens_per_rank (``[num_ranks]``
        int32), is_token_in_rank (``[num_tokens, num_ranks]`` bool) and num_tokens_per_expert
        (``[num_experts]`` int32) from ``get_dispatch_layout``, and optionally topk_idx
        (``[num_tokens, num_topk]`` int64) with topk_weights (``[num_tokens, num_topk]``
        float32). With topk_idx, rows go to the ranks of its experts; without, to the ranks
        is_token_in_rank names. A cached dispatch (handle given) sends x along the handle's
        routing and takes no topk_idx or topk_weights (the backward of a combine).

        expert_alignment: the per-expert counts are rounded up to a multiple of it.
        num_worst_tokens > 0: the received tensors get exactly that many rows (the rows past
        those received: x and weights 0, ids -1) and the count list is empty.
        num_tokens_per_rdma_rank, config and allocate_on_comm_stream have no effect;
        previous_event is waited for. use_fp8 (StrataCL's, keyword only): bfloat16 rows
        travel and arrive as fp8 e4m3 (quantised in flight).

        Returns ``(recv_x, recv_topk_idx, recv_topk_weights, num_recv_tokens_per_expert_list,
        handle, event)``: recv_x ``[num_recv_tokens, hidden]`` of x's dtype (a tuple as x's,
        or with use_fp8), one row per (source rank, token) with an expert here, ordered by
        source rank then token; recv_topk_idx ``[num_recv_tokens, num_topk]`` int64, local
        expert ids (-1 where the expert is elsewhere); recv_topk_weights
        ``[num_recv_tokens, num_topk]`` float32 (0 where the expert is elsewhere); the received
        count per local expert, a list of ``num_experts // num_ranks`` ints; the handle; the
        event. recv_topk_idx and recv_topk_weights are None without topk_idx or topk_weights;
        a cached dispatch returns ``(recv_x, None, None, None, None, event)``. Queued
        (async_finish) outputs are complete after the event's wait: tensors take their row
        count and the list its entries then."""
        self._wait_for(previous_event)
        if expert_alignment < 1:
            raise ValueError(f"stratacl: expert_alignment={expert_alignment} must be >= 1")
        if num_worst_tokens < 0:
            raise ValueError(f"stratacl: num_worst_tokens={num_worst_tokens} must be >= 0")
        is_tuple = isinstance(x, tuple)
        rows, scales = x if is_tuple else (x, None)
        if is_tuple and len(x) != 2:
            raise ValueError("stratacl: fp8 x is a tuple (rows, scales)")
        if _FP8 is not None and isinstance(rows, torch.Tensor) and rows.dtype == _FP8:
            rows = rows.view(torch.uint8)
        if is_tuple:
            rows = _check_tensor(rows, "x[0] (fp8 rows)", torch.uint8, 2)
            scales = _check_tensor(scales, "x[1] (scales)", torch.float32, 2)
            if use_fp8:
                raise ValueError("stratacl: use_fp8 quantises bfloat16 rows; x already is fp8")
        elif not isinstance(rows, torch.Tensor) or rows.dtype not in (
                torch.bfloat16, torch.float16, torch.float32):
            raise ValueError("stratacl: x must be a bfloat16, float16 or float32 tensor or an "
                             "fp8 (rows, scales) tuple")
        else:
            rows = _check_tensor(rows, "x", rows.dtype, 2)
            if use_fp8 and rows.dtype != torch.bfloat16:
                raise ValueError("stratacl: use_fp8 quantises bfloat16 rows, not "
                                 f"{rows.dtype}")
        num_tokens, hidden = rows.shape
        num_ranks = self.group_size
        queued = bool(async_finish)

        if handle is not None:
            h = self._own(handle, low_latency=False)
            if topk_idx is not None or topk_weights is not None:
                raise ValueError("stratacl: a cached dispatch (handle given) takes no topk_idx "
                                 "or topk_weights: it sends x along the handle's routing")
            if (rows.dtype, h._use_fp8) != (h._x_dtype, use_fp8):
                raise ValueError(f"stratacl: the handle's dispatch sent {h._x_dtype} rows "
                                 f"(use_fp8={h._use_fp8}); a cached dispatch sends the same")
            recv, recv_scales, _, _, _, _, _ = h._plan.dispatch(rows, scales, None, None,
                                                                h._routing, queued)
            (recv_x, _, _), complete = self._received(recv, recv_scales, None, None,
                                                      num_worst_tokens, h)
            event = self._submitted(queued, [h._plan], complete)
            return recv_x, None, None, None, None, event

        if num_tokens_per_rank is None or is_token_in_rank is None or \
                num_tokens_per_expert is None:
            raise ValueError("stratacl: a dispatch without a handle needs num_tokens_per_rank, "
                             "is_token_in_rank and num_tokens_per_expert (get_dispatch_layout)")
        num_tokens_per_expert = _check_tensor(num_tokens_per_expert, "num_tokens_per_expert",
                                              torch.int32, 1)
        num_experts = num_tokens_per_expert.shape[0]
        if num_experts < 1 or num_experts % num_ranks:
            raise ValueError(f"stratacl: num_tokens_per_expert has {num_experts} entries, not a "
                             f"positive multiple of the {num_ranks} ranks")
        local_experts = num_experts // num_ranks
        max_tokens = self._normal_max_tokens(hidden, rows.dtype)
        if max_tokens < 1 or num_tokens > max_tokens:
            raise ValueError(
                f"stratacl: x has {num_tokens} tokens; num_nvl_bytes={self.num_nvl_bytes} "
                f"holds {max_tokens} per rank ({num_ranks} ranks x hidden {hidden} x "
                f"{max(_element_size(rows.dtype), 2)} bytes each)")
        counts: List[int] = []
        if topk_idx is None:
            if topk_weights is not None:
                raise ValueError("stratacl: topk_weights goes with topk_idx")
            is_token_in_rank = _check_tensor(is_token_in_rank, "is_token_in_rank", torch.bool, 2)
            if tuple(is_token_in_rank.shape) != (num_tokens, num_ranks):
                raise ValueError(f"stratacl: is_token_in_rank must be [{num_tokens}, "
                                 f"{num_ranks}], not {list(is_token_in_rank.shape)}")
            # One id per destination rank (its first expert): the rows go where the layout says.
            first = torch.arange(num_ranks, dtype=torch.int64) * local_experts
            ids = torch.where(is_token_in_rank, first, torch.full_like(first, -1))
            # The counts per local expert come from every source's num_tokens_per_expert.
            theirs = torch.empty_like(num_tokens_per_expert)
            dist.all_to_all_single(theirs, num_tokens_per_expert, group=self.group)
            if num_worst_tokens == 0:
                counts = _aligned(theirs.view(num_ranks, local_experts).sum(0).tolist(),
                                  expert_alignment)
        else:
            ids = _check_tensor(topk_idx, "topk_idx", torch.int64, 2)
            if ids.shape[0] != num_tokens:
                raise ValueError(f"stratacl: topk_idx has {ids.shape[0]} rows; x has "
                                 f"{num_tokens}")
            ids = ids.clone()  # the handle's own copy: a later combine may need it
            if topk_weights is not None:
                topk_weights = _check_tensor(topk_weights, "topk_weights", torch.float32, 2)
        out_dtype = torch.bfloat16 if is_tuple else rows.dtype
        plan = self._plan(hidden, ids.shape[1], num_experts, max_tokens, rows.dtype, use_fp8,
                          out_dtype, expert_major=False)
        recv, recv_scales, recv_idx, recv_w, per_expert, _, routing = plan.dispatch(
            rows, scales, ids, topk_weights, None, queued)
        h = Handle(self, False, plan, routing, ids, rows.dtype, use_fp8, out_dtype, hidden,
                   max_tokens, num_experts)
        with_topk = topk_idx is not None
        (recv_x, recv_idx, recv_w), complete_rows = self._received(
            recv, recv_scales, recv_idx if with_topk else None,
            recv_w if with_topk and topk_weights is not None else None, num_worst_tokens, h)

        def complete() -> None:
            complete_rows()
            if with_topk and num_worst_tokens == 0:
                counts[:] = _aligned(per_expert.tolist(), expert_alignment)

        event = self._submitted(queued, [plan], complete)
        return recv_x, recv_idx, recv_w, counts, h, event

    def _received(self, recv: torch.Tensor, recv_scales: Optional[torch.Tensor],
                  recv_idx: Optional[torch.Tensor], recv_w: Optional[torch.Tensor],
                  num_worst_tokens: int, h: Handle
                  ) -> Tuple[Tuple[Any, Optional[torch.Tensor], Optional[torch.Tensor]],
                             Callable[[], None]]:
        """The outputs of a token-major dispatch as the caller gets them (padded to
        num_worst_tokens rows if asked), ``(x, idx, weights)``, and what completes them once
        the call finished."""
        if num_worst_tokens == 0:
            outs = [recv, recv_scales, recv_idx, recv_w]
        else:
            w = num_worst_tokens
            outs = [torch.zeros(w, recv.shape[1], dtype=recv.dtype),
                    None if recv_scales is None else torch.zeros(w, recv_scales.shape[1]),
                    None if recv_idx is None else torch.full((w, recv_idx.shape[1]), -1,
                                                             dtype=torch.int64),
                    None if recv_w is None else torch.zeros(w, recv_w.shape[1])]

        def complete() -> None:
            h._ready = True
            if num_worst_tokens == 0:
                return
            n = int(h._routing.num_recv_rows)
            if n > num_worst_tokens:
                raise RuntimeError(f"stratacl: {n} rows arrived, more than num_worst_tokens="
                                   f"{num_worst_tokens}")
            for out, got in zip(outs, (recv, recv_scales, recv_idx, recv_w)):
                if out is not None:
                    out[:n] = got[:n]

        x = outs[0] if outs[1] is None else (outs[0], outs[1])
        return (x, outs[2], outs[3]), complete

    def combine(self, x: torch.Tensor, handle: Handle,
                topk_weights: Optional[torch.Tensor] = None,
                bias: Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor], None] = None,
                config: Optional[Config] = None,
                previous_event: Optional[EventOverlap] = None, async_finish: bool = False,
                allocate_on_comm_stream: bool = False
                ) -> Tuple[torch.Tensor, Optional[torch.Tensor], EventOverlap]:
        """Brings the experts' rows back to their tokens and sums them (normal mode, no
        weights applied).

        x: ``[num_recv_tokens, hidden]``, the dispatch's rows' order, of the dispatch's dtype
        (bfloat16 after fp8 rows); more rows are accepted (a num_worst_tokens dispatch) and
        the rows past num_recv_tokens ignored. handle: that dispatch's (its event waited for).
        topk_weights: ``[num_recv_tokens, num_topk]`` float32 (again, more rows are accepted),
        reduced like x. bias is not supported (ValueError: add it to combined_x). config and
        allocate_on_comm_stream have no effect; previous_event is waited for.

        Returns ``(combined_x, combined_topk_weights, event)``: combined_x ``[num_tokens,
        hidden]`` of x's dtype, per token the sum over its destination ranks, ascending, in
        float32, rounded once (zero for a token that went nowhere); combined_topk_weights
        ``[num_tokens, num_topk]`` float32, the same sum of the topk_weights rows (None without
        topk_weights): given the dispatch's recv_topk_weights, each token's weights come back
        (0 where its id was -1)."""
        self._wait_for(previous_event)
        if bias is not None:
            raise ValueError("stratacl: combine's bias is not supported: add it to combined_x "
                             "(DeepEP adds it before the one rounding)")
        h = self._own(handle, low_latency=False)
        rows = h.num_recv_tokens
        x = _check_tensor(x, "x", h._out_dtype, 2)
        if x.shape[0] < rows:
            raise ValueError(f"stratacl: x has {x.shape[0]} rows; the dispatch delivered {rows}")
        x = x[:rows].contiguous()
        queued = bool(async_finish)
        plans = [h._plan]
        combined_w = None
        if topk_weights is not None:
            w = _check_tensor(topk_weights, "topk_weights", torch.float32, 2)
            if w.shape[0] < rows:
                raise ValueError(f"stratacl: topk_weights has {w.shape[0]} rows; the dispatch "
                                 f"delivered {rows}")
            w = w[:rows].contiguous()
            combined_w = combine_weights(self, h, w, queued)
            plans.append(weights_plan(self, h, w.shape[1]))
        combined_x = h._plan.combine(h._routing, x, None, queued)
        return combined_x, combined_w, self._submitted(queued, plans)
