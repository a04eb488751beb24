"""The events calls return (DeepEP's EventOverlap) and what they wait for: the calls queued on
a Buffer (``async_finish=True``, ``return_recv_hook=True``), or nothing (a call that has already
finished)."""
from typing import TYPE_CHECKING, Any, Callable, Optional, Tuple

import torch

if TYPE_CHECKING:
    from .buffer import Buffer


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
