"""init_process_group("stratacl") through every init_method torch offers: env:// (torchrun's
environment, or one set by hand), tcp:// and file://. Each rank then runs an allreduce, a new
group of the odd ranks, and a barrier, checking every element.

    torchrun --nproc_per_node N init_methods.py env
    stratarun -n N python3 init_methods.py tcp PORT | file DIR | env-by-hand PORT
"""
import os
import sys

import numpy as np
import torch
import torch.distributed as dist

import stratacl
import stratacl.torch  # noqa: F401

method = sys.argv[1]
secret_ok = True
if method == "env":  # torchrun set RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
    # The numpy API's own init first: the job secret must come from torchrun's store (random,
    # the same on every rank, or the init below would fail), not from the job's identity.
    assert "STRATACL_JOB_SECRET" not in os.environ
    comm = stratacl.Comm.from_env()
    secret = os.environ.get("STRATACL_JOB_SECRET", "")
    x = np.full(16, float(comm.rank + 1))
    comm.allreduce(x, x)
    secret_ok = len(secret) == 32 and bool((x == comm.size * (comm.size + 1) / 2).all())
    comm.destroy()
    dist.init_process_group("stratacl")
else:
    rank, size = int(os.environ["STRATACL_RANK"]), int(os.environ["STRATACL_WORLD_SIZE"])
    if method == "tcp":
        url = f"tcp://127.0.0.1:{sys.argv[2]}"
    elif method == "file":
        url = f"file://{os.path.join(sys.argv[2], 'init')}"
    elif method == "env-by-hand":
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[2])
        url = "env://"
    else:
        sys.exit(f"unknown method {method}")
    dist.init_process_group("stratacl", init_method=url, rank=rank, world_size=size)

rank, size = dist.get_rank(), dist.get_world_size()
t = torch.full((1000,), float(rank + 1))
dist.all_reduce(t)
ok = bool((t == size * (size + 1) / 2).all())
odd = dist.new_group([r for r in range(size) if r % 2 == 1])
if rank % 2 == 1:
    u = torch.full((10,), float(rank))
    dist.all_reduce(u, group=odd)
    ok &= bool((u == sum(r for r in range(size) if r % 2 == 1)).all())
dist.barrier()
ok &= secret_ok
print(f"init_methods {method} rank {rank}/{size}: {'ok' if ok else 'WRONG'}", flush=True)
dist.destroy_process_group()
sys.exit(0 if ok else 1)
