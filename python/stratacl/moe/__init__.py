"""Expert-parallel MoE dispatch and combine with DeepEP's Python interface, on a "stratacl"
process group. A DeepEP program runs on it with its import changed::

    import stratacl.torch                  # registers the "stratacl" backend
    import stratacl.moe as deep_ep         # instead of: import deep_ep

    buffer = deep_ep.Buffer(group, num_nvl_bytes, num_rdma_bytes)
    num_tokens_per_rank, _, num_tokens_per_expert, is_token_in_rank, _ = \\
        buffer.get_dispatch_layout(topk_idx, num_experts)
    recv_x, recv_topk_idx, recv_topk_weights, num_recv_tokens_per_expert_list, handle, event = \\
        buffer.dispatch(x, topk_idx=topk_idx, topk_weights=topk_weights,
                        num_tokens_per_rank=num_tokens_per_rank, is_token_in_rank=is_token_in_rank,
                        num_tokens_per_expert=num_tokens_per_expert)
    ...experts run on recv_x...
    combined_x, combined_topk_weights, event = buffer.combine(y, handle, topk_weights=w)

Every method takes DeepEP's parameters by DeepEP's names, in its order, with its defaults (a
misspelt keyword raises TypeError). Parameters that only steer CUDA kernels (config, SM counts,
queue pairs, NVLink and RDMA switches, streams) are accepted and have no effect; values that
ask for something StrataCL does not do raise ValueError naming the parameter. docs/PYTORCH.md
lists every difference; the main ones:

- Routing, row order and rounding are the C API's (include/stratacl/stratacl.h). Normal mode
  delivers one row per (source rank, token) that chose an expert of this rank, ordered by source
  rank, then token; combine sums, per token, the rows its destination ranks return, in ascending
  rank order, in float32, rounded once. Low-latency mode packs rows per local expert, and
  low_latency_combine weights each expert's output and sums over j ascending.
- Sizes: a normal-mode dispatch may pass at most ``num_nvl_bytes // (num_ranks * hidden_bytes)``
  tokens per rank, where ``hidden_bytes = hidden * max(x.element_size(), 2)`` (so the rows one
  dispatch receives fit in num_nvl_bytes); low-latency calls are sized by their own
  ``num_max_dispatch_tokens_per_rank``, and num_rdma_bytes is not used.
- fp8 e4m3 rows are uint8 tensors (torch 1.13 has no float8 type) with float32 scales, one per
  128 columns, in row-major order.
- Handles are opaque (DeepEP's are tuples of its layout tensors).
- Calls block until done or, with ``async_finish=True`` (or ``return_recv_hook=True``), are
  queued on the buffer's own stream and return at once. The returned event's
  ``current_stream_wait()`` (or the hook) waits for every call queued on this Buffer so far;
  outputs may be read only then, and a combine needs its dispatch waited for. Two-batch overlap
  uses one Buffer per micro-batch, so that waiting for one does not wait for the other.

Receivers pull rows straight from the senders' tensors; tensors in the StrataCL heap
(stratacl.torch.use_heap_allocator) are read in place.
"""
# The package's modules, one concept each: buffer (the Buffer and the state its calls share),
# normal_mode and low_latency (its calls, by mode), combine_weights (the plan that carries
# top-k weights back), handle, events, config and tensors (argument checks shared by the modes).
from .buffer import Buffer
from .config import Config
from .events import EventOverlap
from .handle import Handle
from .tensors import topk_idx_t

__all__ = ["Buffer", "Config", "EventOverlap", "Handle", "topk_idx_t"]

# The classes are stratacl.moe's wherever they are defined, as before the package was split:
# their repr, help() and pickles name stratacl.moe.
for _cls in (Buffer, Config, EventOverlap, Handle):
    _cls.__module__ = __name__
del _cls
