"""init_process_group("stratacl") through every init_method torch offers: env:// (torchrun's
environment, or one set by hand), tcp:// and file://. Each rank then runs an allreduce, a new
group of the odd ranks, and a barrier, checking every element.

    torchrun --nproc_per_node N init_methods.py env
    stratarun -n N python3 init_methods.py tcp PORT | file DIR | env-by-hand PORT
"""
import os
import sys

import torch
import torch.distributed as dist

import stratacl.torch  # noqa: F401

method = sys.argv[1]
if method == "env":  # torchrun set RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
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
print(f"init_methods {method} rank {rank}/{size}: {'ok' if ok else 'WRONG'}", flush=True)
dist.destroy_process_group()
sys.exit(0 if ok else 1)
