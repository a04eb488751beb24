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
import numpy as _np

from . import _core
from ._core import Comm, Error, unique_id, version


def empty(shape, dtype=_np.float32):
    """An uninitialised numpy array in the StrataCL heap: collectives read it in place."""
    if isinstance(shape, int):
        shape = (shape,)
    return _core.empty(list(shape), _np.dtype(dtype))


__all__ = ["Comm", "Error", "empty", "unique_id", "version"]
