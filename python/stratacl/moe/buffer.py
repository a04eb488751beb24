"""The Buffer: the state its calls share (the group, the plans, the calls queued), DeepEP's
static helpers, and waiting. The calls themselves are in normal_mode.py and low_latency.py, base
classes that Buffer alone combines: each file then holds one mode."""
from typing import Any, Callable, Dict, List, Optional

import torch
import torch.distributed as dist

from .. import torch as _stratacl_torch
from .._torch import MoeBuffer
from .config import Config
from .events import EventOverlap, _Done, _Queued
from .handle import Handle
from .low_latency import _LowLatencyMode
from .normal_mode import _NormalMode


class Buffer(_NormalMode, _LowLatencyMode):
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
        num_nvl_bytes: bounds the tokens of a normal-mode dispatch (stratacl.moe's docstring).
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
