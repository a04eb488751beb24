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
from ._core import Comm, Error, empty, unique_id, version

__all__ = ["Comm", "Error", "empty", "unique_id", "version"]
