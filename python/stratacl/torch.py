"""StrataCL as a torch.distributed backend. Importing this module registers it::

    import torch.distributed as dist
    import stratacl.torch
    dist.init_process_group("stratacl")       # torchrun, or init_method tcp://, file://, env://

Every c10d collective runs on StrataCL, asynchronously on the group's stream (``async_op=True``
returns a Work whose ``wait()``, ``is_completed()`` and ``get_future()`` behave as NCCL's). The
unique id travels through the c10d store, so every init_method torch offers works, and each
``dist.new_group`` gets its own communicator.

Zero copy needs tensors in the StrataCL heap: ``use_heap_allocator()`` makes every CPU tensor
created afterwards come from it (parameters, DDP's gradient buckets, activations); ``empty()``
makes single ones. Other tensors work too: StrataCL stages them.

Not supported, with a clear error: the bitwise ReduceOps (BAND, BOR, BXOR), PREMUL_SUM, and
receiving from any source. Tags of send/recv are not matched (as with NCCL): messages between
two ranks arrive in the order they were sent.
"""
import atexit
import math
import sys

import torch
import torch.distributed as dist

from . import _torch

ProcessGroupStrataCL = _torch.ProcessGroupStrataCL
BACKEND = "stratacl"


def _create_process_group(store, rank, size, timeout):
    return ProcessGroupStrataCL(store, rank, size, timeout)


def use_heap_allocator():
    """Every CPU tensor created from now on takes its memory from the StrataCL heap, so that
    collectives read it in place. Tensors that exist already keep their memory. In a process
    forked from this one, new tensors come from the previous allocator (StrataCL does not run in
    forked children), and tensors in the heap are not mapped there: use the "spawn" or
    "forkserver" start method for workers that touch tensors (DataLoader's
    multiprocessing_context)."""
    _torch.use_heap_allocator()


def empty(*size, dtype=torch.float32):
    """An uninitialised tensor in the StrataCL heap, whatever the current allocator."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    count = math.prod(size)
    itemsize = torch.empty((), dtype=dtype).element_size()
    raw = _torch.heap_bytes(max(count, 1) * itemsize)
    return raw.view(dtype)[:count].view(size)


def _drain_at_exit():
    """Calls still queued when the program ends finish while the interpreter is whole (see
    exit_drain.h). When a script ends on an uncaught exception (sys.last_value, set before
    atexit handlers run) every group is revoked first, so the failing rank leaves at once and
    its peers learn of it; an interactive session sets sys.last_value for every error it shows,
    so there the calls finish as after a normal end."""
    interactive = hasattr(sys, "ps1") or sys.flags.interactive
    _torch.drain_at_exit(failed=not interactive and getattr(sys, "last_value", None) is not None)


# Registered now, it runs after the handlers the program registers later.
atexit.register(_drain_at_exit)

if BACKEND.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND, _create_process_group)
