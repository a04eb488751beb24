"""Buffer's low-latency calls (DeepEP's low_latency_dispatch, low_latency_combine and their
helpers): rows arrive packed per local expert, and the combine applies the tokens' weights."""
from typing import Callable, Optional, Tuple, Union

import torch

from .events import EventOverlap
from .handle import Handle
from .tensors import _check_tensor


class _LowLatencyMode:
    """Low-latency mode's methods of Buffer (buffer.py), which alone inherits them and provides
    what they use: group_size, _plan, _own, _submitted and _wait_queued."""

    def clean_low_latency_buffer(self, num_max_dispatch_tokens_per_rank: int, hidden: int,
                                 num_experts: int) -> None:
        """Nothing to clean: StrataCL keeps no state between calls in a buffer."""

    def low_latency_dispatch(self, x: torch.Tensor, topk_idx: torch.Tensor,
                             num_max_dispatch_tokens_per_rank: int, num_experts: int,
                             cumulative_local_expert_recv_stats: Optional[torch.Tensor] = None,
                             dispatch_wait_recv_cost_stats: Optional[torch.Tensor] = None,
                             use_fp8: bool = True, round_scale: bool = False,
                             use_ue8m0: bool = False, async_finish: bool = False,
                             return_recv_hook: bool = False
                             ) -> Tuple[Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]],
                                        torch.Tensor, Handle, EventOverlap,
                                        Optional[Callable[[], None]]]:
        """Sends each token to each of its experts, packed per expert (low-latency mode).

        x: ``[num_tokens, hidden]`` bfloat16 (float16 or float32 too without use_fp8), at most
        num_max_dispatch_tokens_per_rank tokens (the same value on every rank). topk_idx:
        ``[num_tokens, num_topk]`` int64, -1 for none. num_experts: E over all ranks, a
        multiple of the group size. use_fp8: rows travel and arrive as fp8 e4m3 with one
        float32 scale per 128 columns (round_scale and use_ue8m0 are not supported:
        ValueError). cumulative_local_expert_recv_stats: ``[num_experts // num_ranks]`` int32,
        the received counts are added to it. dispatch_wait_recv_cost_stats is left unchanged
        (no timing is recorded). async_finish: queued, the event waits. return_recv_hook:
        queued, and the returned hook waits (the received data is complete after it).

        Returns ``(recv_x, recv_count, handle, event, hook)``: recv_x ``[num_experts //
        num_ranks, num_ranks * num_max_dispatch_tokens_per_rank, hidden]`` of x's dtype, or
        with use_fp8 a tuple (that shape in uint8, ``[..., hidden // 128]`` float32 scales in
        row-major order); expert e's first recv_count[e] rows are the (source rank, token)
        pairs that chose it, in that order, and the rest are not written. recv_count
        ``[num_experts // num_ranks]`` int32; hook None unless return_recv_hook."""
        if round_scale or use_ue8m0:
            raise ValueError("stratacl: round_scale and use_ue8m0 are not supported (scales are "
                             "float32, not rounded to powers of 2)")
        if isinstance(x, tuple) or not isinstance(x, torch.Tensor) or x.dtype not in (
                torch.bfloat16, torch.float16, torch.float32):
            raise ValueError("stratacl: low_latency_dispatch takes x as one bfloat16, float16 "
                             "or float32 tensor")
        if use_fp8 and x.dtype != torch.bfloat16:
            raise ValueError(f"stratacl: use_fp8 quantises bfloat16 rows, not {x.dtype}")
        x = _check_tensor(x, "x", x.dtype, 2)
        topk_idx = _check_tensor(topk_idx, "topk_idx", torch.int64, 2)
        num_ranks = self.group_size
        if num_experts < 1 or num_experts % num_ranks:
            raise ValueError(f"stratacl: num_experts={num_experts} must be a positive multiple "
                             f"of the {num_ranks} ranks")
        if x.shape[0] > num_max_dispatch_tokens_per_rank:
            raise ValueError(f"stratacl: x has {x.shape[0]} tokens, more than "
                             f"num_max_dispatch_tokens_per_rank={num_max_dispatch_tokens_per_rank}")
        local_experts = num_experts // num_ranks
        if cumulative_local_expert_recv_stats is not None:
            stats = cumulative_local_expert_recv_stats
            if not isinstance(stats, torch.Tensor) or stats.dtype != torch.int32 or \
                    tuple(stats.shape) != (local_experts,):
                raise ValueError("stratacl: cumulative_local_expert_recv_stats must be a "
                                 f"[{local_experts}] int32 tensor")
        hidden = x.shape[1]
        plan = self._plan(hidden, topk_idx.shape[1], num_experts,
                          num_max_dispatch_tokens_per_rank, x.dtype, use_fp8, x.dtype,
                          expert_major=True)
        queued = bool(async_finish or return_recv_hook)
        recv, recv_scales, _, _, recv_count, _, routing = plan.dispatch(x, None, topk_idx, None,
                                                                        None, queued)
        h = Handle(self, True, plan, routing, topk_idx.clone(), x.dtype, use_fp8, x.dtype,
                   hidden, num_max_dispatch_tokens_per_rank, num_experts)

        def complete() -> None:
            h._ready = True
            if cumulative_local_expert_recv_stats is not None:
                cumulative_local_expert_recv_stats.add_(recv_count)

        event = self._submitted(queued, [plan], complete)
        hook = self._wait_queued if return_recv_hook else None
        recv_x = (recv, recv_scales) if use_fp8 else recv
        return recv_x, recv_count, h, event, hook

    def get_next_low_latency_combine_buffer(self, handle: Handle) -> torch.Tensor:
        """A tensor for the experts' outputs of the handle's dispatch, ``[num_experts //
        num_ranks, num_ranks * num_max_dispatch_tokens_per_rank, hidden]`` of the combine's
        dtype: fill it, then ``low_latency_combine(..., zero_copy=True)`` combines it (whatever
        x is passed). Every combine reads its input in place anyway; this one is the
        handle's own, allocated at the first call."""
        h = self._own(handle, low_latency=True)
        if h._combine_buffer is None:
            local_experts = h._num_experts // self.group_size
            h._combine_buffer = torch.empty(
                local_experts, self.group_size * h._max_tokens, h._hidden,
                dtype=h._out_dtype)
        return h._combine_buffer

    def low_latency_combine(self, x: torch.Tensor, topk_idx: torch.Tensor,
                            topk_weights: torch.Tensor, handle: Handle, use_logfmt: bool = False,
                            zero_copy: bool = False, async_finish: bool = False,
                            return_recv_hook: bool = False, out: Optional[torch.Tensor] = None,
                            combine_wait_recv_cost_stats: Optional[torch.Tensor] = None
                            ) -> Tuple[torch.Tensor, EventOverlap, Optional[Callable[[], None]]]:
        """Brings the experts' outputs back and sums them with the tokens' weights.

        x: ``[num_experts // num_ranks, num_ranks * num_max_dispatch_tokens_per_rank, hidden]``,
        the dispatch's layout, of x's dtype at the dispatch (bfloat16 with use_fp8).
        topk_idx: ``[num_tokens, num_topk]`` int64, the dispatch's ids; an id may be turned to
        -1 here (that term is dropped), no other change. topk_weights: ``[num_tokens,
        num_topk]`` float32. handle: the dispatch's (its event or hook waited for). zero_copy:
        combine the tensor ``get_next_low_latency_combine_buffer(handle)`` returned instead of x.
        out: ``[num_tokens, hidden]`` of the combine's dtype, written and returned.
        use_logfmt has no effect (rows travel as they are); combine_wait_recv_cost_stats is
        left unchanged. async_finish / return_recv_hook: queued, as in low_latency_dispatch.

        Returns ``(combined_x, event, hook)``: combined_x ``[num_tokens, hidden]``, per token
        the sum over j ascending (topk_idx[t, j] >= 0) of topk_weights[t, j] times its expert's
        row, in float32, rounded once; hook None unless return_recv_hook."""
        h = self._own(handle, low_latency=True)
        if zero_copy:
            if h._combine_buffer is None:
                raise ValueError("stratacl: zero_copy=True combines the tensor of "
                                 "get_next_low_latency_combine_buffer(handle): call it first")
            x = h._combine_buffer
        x = _check_tensor(x, "x", h._out_dtype, 3)
        topk_idx = _check_tensor(topk_idx, "topk_idx", torch.int64, 2)
        w = _check_tensor(topk_weights, "topk_weights", torch.float32, 2)
        if topk_idx.shape != h._topk_idx.shape:
            raise ValueError(f"stratacl: topk_idx is {list(topk_idx.shape)}; the dispatch's was "
                             f"{list(h._topk_idx.shape)}")
        if not torch.equal(topk_idx, h._topk_idx):
            dropped = topk_idx < 0
            if not bool(((topk_idx == h._topk_idx) | dropped).all()):
                raise ValueError("stratacl: topk_idx differs from the dispatch's (only turning "
                                 "ids to -1 is supported)")
            w = w.masked_fill(dropped, 0.0)
        if out is not None:
            if not isinstance(out, torch.Tensor) or out.dtype != h._out_dtype or \
                    tuple(out.shape) != (h._topk_idx.shape[0], x.shape[2]):
                raise ValueError(f"stratacl: out must be a [{h._topk_idx.shape[0]}, "
                                 f"{x.shape[2]}] {h._out_dtype} tensor")
        queued = bool(async_finish or return_recv_hook)
        combined = h._plan.combine(h._routing, x, w, queued)
        complete = None
        if out is not None:
            result, combined = combined, out

            def complete() -> None:
                out.copy_(result)

        event = self._submitted(queued, [h._plan], complete)
        hook = self._wait_queued if return_recv_hook else None
        return combined, event, hook
