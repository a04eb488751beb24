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
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import torch
import torch.distributed as dist

from . import torch as _stratacl_torch
from ._torch import MoeBuffer

__all__ = ["Buffer", "Config", "EventOverlap", "Handle", "topk_idx_t"]

#: The dtype of expert ids (DeepEP's ``deep_ep.topk_idx_t``).
topk_idx_t = torch.int64

_FP8 = getattr(torch, "float8_e4m3fn", None)  # newer torch; its bytes travel as uint8
_SCALE_BLOCK = 128  # fp8 rows carry one float32 scale per 128 columns


class Config:
    """DeepEP's performance config for normal-mode calls. StrataCL has no SMs or chunked
    channels to tune: a Config is accepted wherever DeepEP takes one and has no effect."""

    def __init__(self, num_sms: int = 20, num_max_nvl_chunked_send_tokens: int = 6,
                 num_max_nvl_chunked_recv_tokens: int = 256,
                 num_max_rdma_chunked_send_tokens: int = 6,
                 num_max_rdma_chunked_recv_tokens: int = 256) -> None:
        self.num_sms = num_sms
        self.num_max_nvl_chunked_send_tokens = num_max_nvl_chunked_send_tokens
        self.num_max_nvl_chunked_recv_tokens = num_max_nvl_chunked_recv_tokens
        self.num_max_rdma_chunked_send_tokens = num_max_rdma_chunked_send_tokens
        self.num_max_rdma_chunked_recv_tokens = num_max_rdma_chunked_recv_tokens

    def __repr__(self) -> str:
        return (f"Config(num_sms={self.num_sms}, "
                f"num_max_nvl_chunked_send_tokens={self.num_max_nvl_chunked_send_tokens}, "
                f"num_max_nvl_chunked_recv_tokens={self.num_max_nvl_chunked_recv_tokens}, "
                f"num_max_rdma_chunked_send_tokens={self.num_max_rdma_chunked_send_tokens}, "
                f"num_max_rdma_chunked_recv_tokens={self.num_max_rdma_chunked_recv_tokens})")


class _Queued:
    """What an event stands for: the calls queued on one Buffer when it was made (and any
    queued after them, which the wait also covers)."""

    def __init__(self, buffer: "Buffer") -> None:
        self._buffer: Optional[Buffer] = buffer

    def current_stream_wait(self) -> None:
        if self._buffer is not None:
            buffer, self._buffer = self._buffer, None
            buffer._wait_queued()


class _Done:
    """The event of a call that already finished (every blocking call; ``Buffer.capture()``)."""

    def current_stream_wait(self) -> None:
        pass


class EventOverlap:
    """DeepEP's event. ``current_stream_wait()`` returns once the work it stands for is done:
    for a call queued with ``async_finish=True``, every call queued on its Buffer until then (their
    outputs are complete afterwards); for a blocking call or ``Buffer.capture()``, at once (the
    work is done). As a context manager it waits on exit::

        with event:
            ...compute that overlaps the queued calls...
        # the calls are done here

    Attributes: ``event`` (what is waited for; None once released), ``extra_tensors`` (kept
    alive with the event, as DeepEP's are), ``hook_after_wait`` (see
    ``register_hook_after_wait``)."""

    def __init__(self, event: Optional[Any] = None,
                 extra_tensors: Optional[Tuple[torch.Tensor, ...]] = None) -> None:
        self.event = event
        self.extra_tensors = extra_tensors
        self.hook_after_wait: Optional[Callable[[], Any]] = None
        self._release_on_exit = False

    def current_stream_wait(self, release_handle: bool = False) -> None:
        """Waits for the work (on CPU the caller's "current stream" is the calling thread), then
        runs the hook registered with ``register_hook_after_wait``, once. ``release_handle``
        drops ``event`` afterwards."""
        if self.event is not None:
            self.event.current_stream_wait()
        if self.hook_after_wait is not None:
            hook, self.hook_after_wait = self.hook_after_wait, None
            hook()
        if release_handle:
            self.event = None

    def register_hook_after_wait(self, hook_after_wait: Callable[[], Any]) -> None:
        """Runs ``hook_after_wait()`` after the next ``current_stream_wait()``."""
        if self.hook_after_wait is not None:
            raise RuntimeError("stratacl: this EventOverlap already has a hook")
        self.hook_after_wait = hook_after_wait

    def __call__(self, release_handle: bool = False) -> "EventOverlap":
        """``with event(release_handle=True):`` waits on exit and then drops ``event``."""
        self._release_on_exit = release_handle
        return self

    def __enter__(self) -> "EventOverlap":
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        if self.event is not None:
            self.current_stream_wait(release_handle=self._release_on_exit)
        self._release_on_exit = False


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


class Buffer:
    """DeepEP's ``deep_ep.Buffer`` on a "stratacl" process group: normal-mode
    (``get_dispatch_layout``, ``dispatch``, ``combine``) and low-latency
    (``low_latency_dispatch``, ``low_latency_combine``) calls, on any Buffer whatever its
    ``low_latency_mode``.

    StrataCL's calls run on plans fixed by the rows' shape and types (hidden, top-k, experts,
    tokens per rank, dtypes); a Buffer makes the plan a call needs at the first call that needs
    it. Making a plan is collective, as every call is: all ranks make the same calls in the same
    order. Dropping a Buffer is local (ranks may drop theirs at different moments).

    Attributes: ``rank``, ``group_size``, ``group``, ``num_nvl_bytes``, ``num_rdma_bytes``,
    ``low_latency_mode``, ``explicitly_destroy``, ``enable_shrink``, ``num_sms`` (class-wide)."""

    num_sms: int = 20

    def __init__(self, group: Optional[dist.ProcessGroup], num_nvl_bytes: int = 0,
                 num_rdma_bytes: int = 0, low_latency_mode: bool = False,
                 num_qps_per_rank: int = 24, allow_nvlink_for_low_latency_mode: bool = True,
                 allow_mnnvl: bool = False, explicitly_destroy: bool = False,
                 enable_shrink: bool = False, comm: Optional[Any] = None) -> None:
        """group: a process group of backend "stratacl"; None: ``dist.group.WORLD``.
        num_nvl_bytes: bounds the tokens of a normal-mode dispatch (the module's docstring).
        num_rdma_bytes, low_latency_mode, num_qps_per_rank, allow_nvlink_for_low_latency_mode,
        allow_mnnvl: accepted and recorded; they steer DeepEP's transports and have no effect.
        explicitly_destroy: as DeepEP, ``destroy()`` must then be called (and may only be called
        then). enable_shrink=True (masking failed ranks) and ``comm`` (an mpi4py communicator)
        are not supported: ValueError."""
        if comm is not None:
            raise ValueError("stratacl: comm (an mpi4py communicator) is not supported: pass a "
                             "\"stratacl\" process group")
        if enable_shrink:
            raise ValueError("stratacl: enable_shrink=True is not supported (StrataCL does not "
                             "mask ranks out of a call)")
        if group is None:
            group = dist.group.WORLD
            if group is None:
                raise RuntimeError("stratacl: Buffer(None) needs dist.init_process_group first")
        if not isinstance(group, _stratacl_torch.ProcessGroupStrataCL):
            raise ValueError("stratacl: Buffer needs a process group of backend \"stratacl\", "
                             f"not {type(group).__name__}")
        if num_nvl_bytes < 0 or num_rdma_bytes < 0:
            raise ValueError("stratacl: num_nvl_bytes and num_rdma_bytes must be >= 0")
        self.group = group
        self.rank, self.group_size = group.rank(), group.size()
        self.num_nvl_bytes, self.num_rdma_bytes = int(num_nvl_bytes), int(num_rdma_bytes)
        self.low_latency_mode = low_latency_mode
        self.num_qps_per_rank = num_qps_per_rank
        self.explicitly_destroy, self.enable_shrink = explicitly_destroy, enable_shrink
        self._plans: Optional[Dict[tuple, MoeBuffer]] = {}
        self._queued: List[MoeBuffer] = []  # plans with calls queued since the last wait
        self._after_wait: List[Callable[[], None]] = []  # completes their outputs

    # --- DeepEP's static helpers ---

    @staticmethod
    def is_sm90_compiled() -> bool:
        """False: StrataCL has no CUDA kernels (fp8 rows are supported nonetheless)."""
        return False

    @staticmethod
    def set_num_sms(new_num_sms: int) -> None:
        """Records the SM count (even, as DeepEP requires) that configs report; no effect."""
        if new_num_sms % 2 != 0:
            raise ValueError("stratacl: the SM count must be even")
        Buffer.num_sms = new_num_sms

    @staticmethod
    def capture() -> EventOverlap:
        """An event for the work issued so far on the current stream: on CPU that work is done,
        so the event is complete (useful as ``previous_event``)."""
        return EventOverlap(_Done())

    @staticmethod
    def get_dispatch_config(num_ranks: int) -> Config:
        """A Config for dispatch (accepted and without effect, as every Config)."""
        return Config(Buffer.num_sms)

    @staticmethod
    def get_combine_config(num_ranks: int) -> Config:
        """A Config for combine (accepted and without effect, as every Config)."""
        return Config(Buffer.num_sms)

    @staticmethod
    def get_low_latency_rdma_size_hint(num_max_dispatch_tokens_per_rank: int, hidden: int,
                                       num_ranks: int, num_experts: int) -> int:
        """The bytes of the bfloat16 rows one low-latency dispatch receives on a rank
        (``[num_experts // num_ranks, num_ranks * num_max_dispatch_tokens_per_rank, hidden]``).
        A size to pass as num_rdma_bytes; StrataCL does not use num_rdma_bytes."""
        return (num_experts // num_ranks) * num_ranks * num_max_dispatch_tokens_per_rank * \
            hidden * 2

    # --- lifetime ---

    def destroy(self) -> None:
        """Waits for the queued calls and releases the plans (local). Only with
        ``explicitly_destroy=True``, as DeepEP; the Buffer is unusable afterwards."""
        if not self.explicitly_destroy:
            raise RuntimeError("stratacl: destroy() needs Buffer(..., explicitly_destroy=True)")
        if self._plans is not None:
            self._wait_queued()
            self._plans = None

    def _plan(self, hidden: int, topk: int, num_experts: int, max_tokens: int,
              x_dtype: torch.dtype, fp8_in_flight: bool, out_dtype: torch.dtype,
              expert_major: bool) -> MoeBuffer:
        if self._plans is None:
            raise RuntimeError("stratacl: this Buffer was destroyed")
        key = (hidden, topk, num_experts, max_tokens, x_dtype, fp8_in_flight, out_dtype,
               expert_major)
        plan = self._plans.get(key)
        if plan is None:
            plan = MoeBuffer(self.group, hidden, topk, num_experts, max_tokens, x_dtype,
                             fp8_in_flight, out_dtype, expert_major)
            self._plans[key] = plan
        return plan

    # --- waiting ---

    def _wait_queued(self) -> None:
        """Waits for every call queued on this Buffer, then completes their outputs."""
        plans, self._queued = self._queued, []
        hooks, self._after_wait = self._after_wait, []
        error: Optional[BaseException] = None
        for plan in plans:  # every plan, even after a failure: nothing stays in flight
            try:
                plan.wait()
            except BaseException as e:  # noqa: BLE001  (re-raised below)
                error = error or e
        if error is not None:
            raise error
        for hook in hooks:
            hook()

    def _submitted(self, queued: bool, plans: List[MoeBuffer],
                   complete: Optional[Callable[[], None]] = None) -> EventOverlap:
        """After a call: completes its outputs now (blocking) or at the wait (queued)."""
        if not queued:
            if complete is not None:
                complete()
            return EventOverlap(_Done())
        for plan in plans:
            if all(p is not plan for p in self._queued):
                self._queued.append(plan)
        if complete is not None:
            self._after_wait.append(complete)
        return EventOverlap(_Queued(self))

    @staticmethod
    def _wait_for(previous_event: Optional[EventOverlap]) -> None:
        """DeepEP starts a call after previous_event: here the caller waits for it."""
        if previous_event is None:
            return
        if not isinstance(previous_event, EventOverlap):
            raise TypeError("stratacl: previous_event must be an EventOverlap, not "
                            f"{type(previous_event).__name__}")
        if previous_event.event is not None:
            previous_event.event.current_stream_wait()

    def _own(self, handle: Any, low_latency: bool) -> Handle:
        if not isinstance(handle, Handle):
            raise TypeError("stratacl: handle must be the handle a dispatch returned, not "
                            f"{type(handle).__name__}")
        if handle._buffer is not self:
            raise ValueError("stratacl: the handle belongs to another Buffer")
        if handle._low_latency != low_latency:
            raise ValueError("stratacl: a " + ("low-latency" if handle._low_latency else "normal")
                             + "-mode handle; this call needs a " +
                             ("low-latency" if low_latency else "normal") + "-mode one")
        if not handle._ready:
            raise RuntimeError("stratacl: the handle's dispatch is still queued: wait for its "
                               "event (or hook) first")
        return handle

    # --- normal mode ---

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
            combined_w = self._combine_weights(h, w, queued)
            plans.append(self._plan(w.shape[1], h._topk_idx.shape[1], h._num_experts,
                                    h._max_tokens, torch.float32, False, torch.float32, False))
        combined_x = h._plan.combine(h._routing, x, None, queued)
        return combined_x, combined_w, self._submitted(queued, plans)

    def _combine_weights(self, h: Handle, w: torch.Tensor, queued: bool) -> torch.Tensor:
        """Sums the expert side's weight rows back to their tokens: a combine on a plan whose
        rows are the weights (float32, num_topk wide), routed as the handle's dispatch. That
        routing comes from one dispatch of that plan (zero rows, the handle's expert ids),
        made at the handle's first combine with weights."""
        plan = self._plan(w.shape[1], h._topk_idx.shape[1], h._num_experts, h._max_tokens,
                          torch.float32, False, torch.float32, False)
        routing = h._weights.get(w.shape[1])
        if routing is None:
            zeros = torch.zeros(h._topk_idx.shape[0], w.shape[1])
            routing = plan.dispatch(zeros, None, h._topk_idx, None, None, False)[6]
            if routing.num_recv_rows != w.shape[0]:
                raise RuntimeError("stratacl: the weights' routing delivered "
                                   f"{routing.num_recv_rows} rows, not {w.shape[0]}")
            h._weights[w.shape[1]] = routing
        return plan.combine(routing, w, None, queued)

    # --- low-latency mode ---

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
