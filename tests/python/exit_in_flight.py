"""A rank that leaves with calls in flight: no wait(), no destroy_process_group().

Rank 0 queues an allreduce on a tensor it then lets go of, and a send that the backend holds
back until something needs it, and returns from the script. Rank 1 joins both only once rank 0
has begun to exit. Both must still finish, with the right data on rank 1, and rank 0 must exit
with status 0.

What it guards: the completion drops the last reference to the tensor on the group's stream
thread, and torch takes the GIL there to free the tensor's Python object. Once the interpreter
has begun to finalize, CPython ends such a thread inside a destructor and the process aborts.
StrataCL's atexit handler waits for the streams while the interpreter is still whole. The
first handler this script registers runs last and holds the GIL in C for half a second
(ctypes.PyDLL calls keep it), so without StrataCL's handler the completion would wait for the
GIL until the finalization had begun, every time.
"""
import atexit
import ctypes

atexit.register(ctypes.PyDLL(None).usleep, 500_000)  # before any import registers a handler

import os  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from common import Checks, init  # noqa: E402

RANK, N = init("exit_in_flight")
assert N == 2, "two ranks"
exiting = os.path.join(os.environ["STRATACL_TEST_DIR"], "rank0.exiting")
values = torch.arange(1 << 16, dtype=torch.float32)

if RANK == 0:
    work = dist.all_reduce(values.clone(), async_op=True)
    del work  # the stream holds the Work, and the Work the only reference to the tensor
    dist.isend(-values, 1)  # held back: issued at exit
    # The group outlives the interpreter (as one a C extension keeps would): its destructor,
    # which would issue the held send too, never runs.
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(dist.group.WORLD))
    atexit.register(lambda: open(exiting, "w").close())  # runs first of all
else:
    checks = Checks("exit_in_flight")
    while not os.path.exists(exiting):
        time.sleep(0.001)
    time.sleep(0.1)  # well inside rank 0's half second
    mine = values.clone()
    dist.all_reduce(mine)
    checks.equal(mine, 2 * values, "the sum of a call rank 0 left in flight")
    sent = torch.empty_like(values)
    dist.recv(sent, 0)
    checks.equal(sent, -values, "a send rank 0 left held back")
    dist.destroy_process_group()
    sys.exit(checks.finish())
