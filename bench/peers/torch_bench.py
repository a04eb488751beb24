#!/usr/bin/python3
"""torch.distributed peer of scl-bench: backend gloo, or StrataCL's backend "stratacl".

Same sizes, warm-up, iterations, busbw formulas, check and output rows as every peer (see
bench/peers/peer_common.h):  library,collective,ranks,bytes,time_us,busbw_gbs,repeat

Run with Debian's interpreter (python3-torch imports only under /usr/bin/python3), one process
per rank started by StrataCL's launcher, which sets STRATACL_RANK and STRATACL_WORLD_SIZE:

    build/tools/stratarun -n 2 /usr/bin/python3 bench/peers/torch_bench.py \
        --store /tmp/empty-dir -b 8 -e 256M [--backend stratacl [--heap]]

(--backend stratacl needs the build tree's package on PYTHONPATH: build/python.) --heap installs
StrataCL's heap as torch's CPU allocator before any tensor is made, so every tensor is a
zero-copy buffer; without it StrataCL stages torch's ordinary tensors.

Rendezvous: init_method file://DIR/init (the directory must be fresh for every run).
Collectives, float32 sum, as torch 1.13's c10d API offers them:
  allreduce       dist.all_reduce, in place (torch has no out-of-place form); the buffer is not
                  refilled between timed calls (values grow; the time does not depend on them)
  allgather       dist.all_gather into a list of views of one output tensor
                  (all_gather_into_tensor is not supported by gloo in 1.13)
  reduce_scatter  dist.reduce_scatter from a list of views of one input tensor; gloo: skipped
                  (ProcessGroupGloo in 1.13 supports neither reduce_scatter nor
                  reduce_scatter_tensor)
  alltoall        dist.all_to_all_single, out of place
  broadcast       dist.broadcast from root 0, in place
"""
import argparse
import os
import sys
import time
import warnings

import torch
import torch.distributed as dist

COLLECTIVES = ["allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast"]
SPLITS = {"allgather", "reduce_scatter", "alltoall"}
UNSUPPORTED_BY_GLOO = {
    "reduce_scatter": "ProcessGroupGloo in torch 1.13 supports neither reduce_scatter nor "
                      "reduce_scatter_tensor",
}


def parse_size(text):
    shift = {"K": 10, "M": 20, "G": 30}.get(text[-1:].upper(), 0)
    return int(text[:-1] if shift else text) << shift


def bus_factor(collective, n):
    if collective == "allreduce":
        return 2.0 * (n - 1) / n
    if collective == "broadcast":
        return 1.0
    return (n - 1) / n


def values(rank, start, count):
    """Elements start..start+count-1 of rank's input: ((i + 7 rank) mod 17) - 8."""
    index = torch.arange(start, start + count, dtype=torch.int64)
    return index.add_(7 * rank).remainder_(17).sub_(8).to(torch.float32)


def expected(collective, count, n, rank):
    chunk = count // n
    if collective == "allreduce":
        table = sum(values(r, 0, 17) for r in range(n))
        return table[torch.arange(count, dtype=torch.int64).remainder_(17)]
    if collective == "allgather":
        return torch.cat([values(q, 0, chunk) for q in range(n)])
    if collective == "alltoall":
        return torch.cat([values(q, rank * chunk, chunk) for q in range(n)])
    if collective == "reduce_scatter":
        table = sum(values(r, 0, 17) for r in range(n))
        return table[torch.arange(rank * chunk, (rank + 1) * chunk, dtype=torch.int64)
                     .remainder_(17)]
    return values(0, 0, count)  # broadcast


class Bench:
    def __init__(self, rank, n, cap):
        self.rank, self.n = rank, n
        # zeros() writes every element: the pages are faulted in before any timing.
        self.send = torch.zeros(cap, dtype=torch.float32)
        self.recv = torch.zeros(cap, dtype=torch.float32)

    def prepare(self, collective, count):
        """The call to time, with its tensors made once per size."""
        chunk = count // self.n
        send, recv = self.send[:count], self.recv[:count]
        if collective == "allreduce":
            return lambda: dist.all_reduce(recv)
        if collective == "allgather":
            outputs = list(recv.split(chunk))
            source = self.send[:chunk]
            return lambda: dist.all_gather(outputs, source)
        if collective == "alltoall":
            return lambda: dist.all_to_all_single(recv, send)
        if collective == "reduce_scatter":
            inputs = list(send.split(chunk))
            output = self.recv[:chunk]
            return lambda: dist.reduce_scatter(output, inputs)
        if collective == "broadcast":
            return lambda: dist.broadcast(recv, 0)
        raise ValueError(collective)

    def check_once(self, collective, count, call):
        chunk = count // self.n
        self.recv[:count].fill_(float("nan"))
        if collective == "allreduce":
            self.recv[:count].copy_(values(self.rank, 0, count))
        elif collective == "allgather":
            self.send[:chunk].copy_(values(self.rank, 0, chunk))
        elif collective in ("alltoall", "reduce_scatter"):
            self.send[:count].copy_(values(self.rank, 0, count))
        elif collective == "broadcast" and self.rank == 0:
            self.recv[:count].copy_(values(0, 0, count))
        call()
        want = expected(collective, count, self.n, self.rank)
        got = self.recv[:want.numel()]
        wrong = torch.tensor([int((got != want).sum())], dtype=torch.int64)
        dist.all_reduce(wrong)
        return int(wrong[0])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-b", type=parse_size, default=8)
    p.add_argument("-e", type=parse_size, default=32 << 20)
    p.add_argument("-f", type=int, default=2)
    p.add_argument("-n", type=int, default=20)
    p.add_argument("-w", type=int, default=5)
    p.add_argument("-c", type=int, default=1, choices=[0, 1])
    p.add_argument("-C", default=",".join(COLLECTIVES))
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--backend", default="gloo", choices=["gloo", "stratacl"])
    p.add_argument("--heap", action="store_true",
                   help="stratacl: every tensor from StrataCL's heap (zero copy)")
    p.add_argument("--label", default=None, help="default: torch-<backend>[-heap]")
    p.add_argument("--store", required=True, help="a fresh directory shared by the ranks")
    a = p.parse_args()
    if a.heap and a.backend != "stratacl":
        p.error("--heap needs --backend stratacl")
    label = a.label or "torch-" + a.backend + ("-heap" if a.heap else "")
    unsupported = UNSUPPORTED_BY_GLOO if a.backend == "gloo" else {}
    collectives = a.C.split(",")
    for c in collectives:
        if c not in COLLECTIVES:
            p.error("unknown collective " + c)
    if a.f < 2 or a.b < 1 or a.b > a.e:
        p.error("need -f >= 2 and 0 < -b <= -e")

    rank = int(os.environ.get("STRATACL_RANK", os.environ.get("RANK", "-1")))
    n = int(os.environ.get("STRATACL_WORLD_SIZE", os.environ.get("WORLD_SIZE", "0")))
    if not 0 <= rank < n:
        sys.exit("torch_bench: run under stratarun (STRATACL_RANK/STRATACL_WORLD_SIZE)")
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)  # one core per rank, like every other library here
    if a.backend == "stratacl":
        import stratacl.torch
        if a.heap:
            stratacl.torch.use_heap_allocator()
    dist.init_process_group(a.backend, init_method="file://" + os.path.join(a.store, "init"),
                            rank=rank, world_size=n)
    if rank == 0:
        print("# %s: torch %s, backend %s%s, init_method file://"
              % (label, torch.__version__, a.backend, ", heap tensors" if a.heap else ""),
              flush=True)

    bench = Bench(rank, n, a.e // 4 + 16)
    total_wrong = 0
    for collective in collectives:
        if collective in unsupported:
            if rank == 0:
                print("# %s %s: skipped: %s" % (label, collective, unsupported[collective]),
                      flush=True)
            continue
        size = a.b
        while size <= a.e:
            count = size // 4
            if collective in SPLITS:
                count -= count % n
            if count > 0:
                call = bench.prepare(collective, count)
                if a.c:
                    wrong = bench.check_once(collective, count, call)
                    if wrong and rank == 0:
                        print("torch_bench: %s %d B: %d wrong elements"
                              % (collective, size, wrong), file=sys.stderr, flush=True)
                    total_wrong += wrong
                for _ in range(a.w):
                    call()
                dist.barrier()
                start = time.perf_counter()
                for _ in range(a.n):
                    call()
                local_us = (time.perf_counter() - start) * 1e6 / a.n
                slowest = torch.tensor([local_us], dtype=torch.float64)
                dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
                if rank == 0:
                    t = float(slowest[0])
                    nbytes = count * 4
                    busbw = nbytes / t / 1e3 * bus_factor(collective, n) if t > 0 else 0.0
                    print("%s,%s,%d,%d,%.3f,%.6g,%d"
                          % (label, collective, n, nbytes, t, busbw, a.repeat), flush=True)
            size *= a.f
    dist.barrier()
    dist.destroy_process_group()
    return 0 if total_wrong == 0 else 1


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Without finalizing the interpreter: a torch 1.13 gloo worker that drops a call's tensors as
    # it begins to finalize is ended by CPython inside a destructor, and the process aborts.
    os._exit(code)
