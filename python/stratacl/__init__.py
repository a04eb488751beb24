"""StrataCL from Python: collectives on numpy arrays, and (``import stratacl.torch``) a
torch.distributed backend named "stratacl".

    import numpy as np, stratacl
    comm = stratacl.Comm.from_env()          # under stratarun, torchrun, mpirun or srun
    x = stratacl.empty((1 << 20,), np.float32)   # in the registration-on-allocation heap
    x[:] = comm.rank
    comm.allreduce(x, x)                     # in place, zero-copy

Arrays from anywhere else work too: StrataCL stages them. Failures raise ``stratacl.Error``
(a RuntimeError) whose message names the argument, rank or call at fault.
"""
import os as _os

import numpy as _np

# Before the library loads: libfabric's libinfinipath would otherwise take over SIGINT, SIGTERM
# and the crash signals (Ctrl-C would end the program with status 1, not KeyboardInterrupt).
_os.environ.setdefault("IPATH_NO_BACKTRACE", "1")

from . import _core  # noqa: E402
from ._core import Comm, Error, unique_id, version  # noqa: E402


def _keep_python_handlers():
    """If libinfinipath was loaded before us (by an MPI, say), the library has set its signals
    back to the default, under Python's feet: the handlers Python holds for SIGINT and SIGTERM
    (its KeyboardInterrupt, or the program's) go back."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread may set handlers; it imports first in any real program
    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if callable(handler):
            signal.signal(sig, handler)


_keep_python_handlers()


def _share_torchrun_secret():
    """Under torchrun, rank 0 draws the job secret and the others read it from torchrun's c10d
    store, so that no one can derive it from the job's identity (the C library would, lacking
    STRATACL_JOB_SECRET). Anyone who can connect to the store can read it, as they can read
    everything torch keeps there."""
    env = _os.environ
    if "STRATACL_JOB_SECRET" in env or "TORCHELASTIC_RUN_ID" not in env or "RANK" not in env:
        return
    # Only the agent's store is there to meet (static rendezvous: --master_addr/--master_port).
    # Under the c10d rendezvous (--standalone, --rdzv_backend c10d) MASTER_PORT is a free port
    # that no one serves before init_process_group: the secret stays derived (README).
    if env.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
        return
    if "STRATACL_RANK" in env or "MASTER_ADDR" not in env or "MASTER_PORT" not in env:
        return
    from datetime import timedelta

    import torch.distributed as dist

    timeout = timedelta(milliseconds=int(env.get("STRATACL_TIMEOUT_MS", "300000")))
    store = dist.TCPStore(env["MASTER_ADDR"], int(env["MASTER_PORT"]), None, False, timeout)
    key = ("stratacl/job_secret/" + env["TORCHELASTIC_RUN_ID"] + "/" +
           env.get("TORCHELASTIC_RESTART_COUNT", "0"))
    if int(env["RANK"]) == 0:
        store.set(key, _os.urandom(16).hex())
    env["STRATACL_JOB_SECRET"] = store.get(key).decode()


_from_env = Comm.from_env


def _comm_from_env():
    """Joins the job the launcher describes (stratarun, torchrun, Open MPI, MPICH, Slurm)."""
    _share_torchrun_secret()
    return _from_env()


Comm.from_env = staticmethod(_comm_from_env)


def empty(shape, dtype=_np.float32):
    """An uninitialised numpy array in the StrataCL heap: collectives read it in place."""
    if isinstance(shape, int):
        shape = (shape,)
    return _core.empty(list(shape), _np.dtype(dtype))


__all__ = ["Comm", "Error", "empty", "unique_id", "version"]
