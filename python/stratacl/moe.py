"""Expert-parallel MoE dispatch and combine with DeepEP's shape, on a "stratacl" process group.

    import stratacl.torch
    from stratacl.moe import Buffer
    buf = Buffer(group, hidden=7168, num_experts=256, num_topk=8, max_tokens_per_rank=4096)
    layout = buf.get_dispatch_layout(topk_idx)
    recv_x, recv_topk_idx, recv_topk_weights, per_expert, handle, _ = buf.dispatch(
        x, topk_idx=topk_idx, topk_weights=topk_weights)
    ...experts run on recv_x...
    combined_x, _, _ = buf.combine(expert_out, handle)

Normal mode (token-major): this rank receives one row per (source rank, token) that chose at
least one of its experts, ordered by source rank, then token; recv_topk_idx holds local expert
ids (-1 where the expert is elsewhere). combine sums, per token, the rows its destination ranks
return, in ascending rank order, in float32, rounded once.

Low-latency mode (``low_latency_mode=True``, expert-major): ``low_latency_dispatch`` returns
rows packed per local expert, ``[num_local_experts, num_ranks * max_tokens_per_rank, hidden]``,
and the count per expert; ``low_latency_combine`` weights each expert's output by topk_weights
and sums over j ascending.

FP8 e4m3 rows travel as uint8 tensors (torch 1.13 has no float8 type) with float32 scales, one
per 128 columns: pass ``x=(rows, scales)``, or bfloat16 rows with ``fp8=True`` to quantise them
in flight. Receivers pull rows straight from the senders' tensors; tensors in the StrataCL heap
(stratacl.torch.use_heap_allocator) are read in place.

Calls block until done, or, with ``async_finish=True``, are queued on the buffer's own stream
and return at once with an ``EventOverlap``: ``event.current_stream_wait()`` waits for every
call queued on this buffer so far. Outputs may be read only after the wait (a combine needs its
dispatch waited for); a token-major dispatch's outputs take their row count then, and its
per-expert counts come as an int32 tensor instead of a list. Two-batch overlap uses one Buffer
per micro-batch, so that waiting for one does not wait for the other. Other arguments DeepEP takes for its own scheduling
(layout tensors, config, previous events) are accepted and ignored: StrataCL computes the
layout itself.
"""
import torch

from . import torch as _stratacl_torch  # noqa: F401  (the backend and its module)
from ._torch import MoeBuffer


class EventOverlap:
    """DeepEP's event: ``current_stream_wait()`` waits for the calls it stands for. Used as a
    context manager, it waits on exit."""

    def __init__(self, buffer=None):
        self._buffer = buffer

    def current_stream_wait(self):
        if self._buffer is not None:
            self._buffer.wait()
            self._buffer = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.current_stream_wait()


class Buffer:
    def __init__(self, group, hidden, num_experts, num_topk, max_tokens_per_rank,
                 x_dtype=torch.bfloat16, out_dtype=torch.bfloat16, fp8=False,
                 low_latency_mode=False):
        """fp8: rows arrive as fp8 e4m3 (bfloat16 rows are quantised in flight; pass
        x_dtype=torch.uint8 to send rows that already are fp8)."""
        if group is None:
            group = torch.distributed.distributed_c10d._get_default_group()
        self.group, self.num_experts, self.num_topk = group, num_experts, num_topk
        self.low_latency_mode = low_latency_mode
        self._buf = MoeBuffer(group, hidden, num_topk, num_experts, max_tokens_per_rank, x_dtype,
                              fp8 and x_dtype != torch.uint8, out_dtype, low_latency_mode)
        self.num_local_experts = self._buf.num_local_experts

    def get_dispatch_layout(self, topk_idx, num_experts=None, **_ignored):
        """(num_tokens_per_rank, None, num_tokens_per_expert, is_token_in_rank, None)."""
        if num_experts is not None and num_experts != self.num_experts:
            raise ValueError(f"stratacl: this buffer routes over {self.num_experts} experts")
        per_rank, per_expert, in_rank = self._buf.layout(topk_idx)
        return per_rank, None, per_expert, in_rank, None

    @staticmethod
    def _rows(x):
        return x if isinstance(x, tuple) else (x, None)

    def _event(self, async_finish):
        return EventOverlap(self._buf if async_finish else None)

    def dispatch(self, x, handle=None, topk_idx=None, topk_weights=None, async_finish=False,
                 **_ignored):
        """(recv_x, recv_topk_idx, recv_topk_weights, num_recv_tokens_per_expert_list, handle,
        None). recv_x is (rows, scales) when rows arrive as fp8. A handle reuses its routing
        (topk_idx may then be None): the backward of combine."""
        if self.low_latency_mode:
            raise RuntimeError("stratacl: a low-latency buffer dispatches with "
                               "low_latency_dispatch")
        rows, scales = self._rows(x)
        recv, recv_scales, idx, weights, per_expert, _, handle = self._buf.dispatch(
            rows, scales, topk_idx, topk_weights, handle, async_finish)
        recv_x = recv if recv_scales is None else (recv, recv_scales)
        counts = per_expert if async_finish else per_expert.tolist()
        return recv_x, idx, weights, counts, handle, self._event(async_finish)

    def combine(self, x, handle, topk_weights=None, async_finish=False, **_ignored):
        """(combined_x, None, event): per token, the sum of what its destination ranks
        return."""
        if self.low_latency_mode:
            raise RuntimeError("stratacl: a low-latency buffer combines with low_latency_combine")
        return self._buf.combine(handle, x, None, async_finish), None, self._event(async_finish)

    def low_latency_dispatch(self, x, topk_idx, num_max_dispatch_tokens_per_rank=None,
                             num_experts=None, async_finish=False, **_ignored):
        """(recv_x, recv_count, handle, event, None): rows packed per local expert."""
        if not self.low_latency_mode:
            raise RuntimeError("stratacl: create the Buffer with low_latency_mode=True")
        rows, scales = self._rows(x)
        recv, recv_scales, _, _, count, _, handle = self._buf.dispatch(rows, scales, topk_idx,
                                                                       None, None, async_finish)
        recv_x = recv if recv_scales is None else (recv, recv_scales)
        return recv_x, count, handle, self._event(async_finish), None

    def low_latency_combine(self, x, topk_idx, topk_weights, handle, async_finish=False,
                            **_ignored):
        """(combined_x, event, None): per token, sum over j of topk_weights[t, j] times its
        expert's output, in j order."""
        if not self.low_latency_mode:
            raise RuntimeError("stratacl: create the Buffer with low_latency_mode=True")
        return (self._buf.combine(handle, x, topk_weights, async_finish),
                self._event(async_finish), None)
