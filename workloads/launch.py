"""What every workload does first, under stratarun or torchrun: give BLAS its share of the
cores (import this before torch: BLAS fixes its thread count when it loads), then join the job.
"""
import hashlib
import os
import tempfile

_local = int(os.environ.get("STRATACL_LOCAL_WORLD_SIZE", os.environ.get("LOCAL_WORLD_SIZE", 1)))
THREADS = max(1, len(os.sched_getaffinity(0)) // _local)  # this rank's share of the cores
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(THREADS))
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))


_store_file = None  # the file store init() named, if any: removed by leave()


def init(init_method, name):
    """The default group on StrataCL and a gloo group over the same ranks: (rank, size, gloo).
    init_method None: env:// under torchrun, else a file store named after stratarun's job in
    this host's temporary directory (hosts that share no file system need tcp://, or
    torchrun)."""
    global _store_file
    import torch
    import torch.distributed as dist

    import stratacl.torch  # noqa: F401  (registers the backend)
    torch.set_num_threads(THREADS)
    rank = int(os.environ.get("STRATACL_RANK", os.environ.get("RANK", 0)))
    size = int(os.environ.get("STRATACL_WORLD_SIZE", os.environ.get("WORLD_SIZE", 1)))
    method = init_method
    if method is None and "MASTER_ADDR" in os.environ:
        method = "env://"
    if method is None:
        job = os.environ.get("STRATACL_ROOT_ADDR", "") + os.environ.get("STRATACL_JOB_SECRET", "")
        digest = hashlib.sha256(job.encode()).hexdigest()[:16]
        _store_file = f"{tempfile.gettempdir()}/stratacl-{name}-{digest}"
        method = f"file://{_store_file}"
    dist.init_process_group("stratacl", init_method=method, rank=rank, world_size=size)
    return rank, size, dist.new_group(backend="gloo")


def leave(code):
    """Exits with `code` once every rank is done, without finalizing the interpreter: torch
    1.13's gloo hangs or aborts there. Its ProcessGroupGloo, destroyed with DDP's Reducer while
    the GIL is held, joins a worker thread that waits for the GIL; and a worker that drops a
    call's tensors as the interpreter begins to finalize is ended by CPython inside a
    destructor. The groups are not destroyed, so rank 0 removes the file store init() named
    (destroying the default group would have), once every rank is past the barrier."""
    import sys

    import torch.distributed as dist

    dist.barrier()
    if _store_file is not None and dist.get_rank() == 0:
        try:
            os.unlink(_store_file)
        except FileNotFoundError:
            pass
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
