"""What the trainers share: process groups and paths, the timed step loop with its breakdown,
the replicated-parameter check, results, and --check across paths.

A step is a function of the step number that runs forward, backward and the optimizer, sets
`comm.phase` as it goes and returns (loss, {phase: seconds}). The loop times `warmup + steps`
steps, each after a barrier; the breakdown is the median over the timed steps of each phase's
wall time, with the exposed communication (comm.Comm's clock) taken out of the phase it
happened in. DDP's allreduces run inside autograd where no clock reaches: for modes that use
DDP, the loop times the same steps again under no_sync (forward and backward only), and the
backward's difference is DDP's exposed communication.
"""
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import launch  # noqa: E402  (first: it gives BLAS its threads)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from bitwise import bits  # noqa: E402
from comm import PATHS, Comm  # noqa: E402

PHASES = ("forward", "backward", "optimizer")


def init(init_method=None):
    """The default group on StrataCL and a gloo group: (rank, size, gloo)."""
    return launch.init(init_method, "train")


def path_comm(path, gloo):
    """The path's Comm. The stratacl path turns the heap allocator on: build its model after."""
    if path not in PATHS:
        raise ValueError(f"unknown path {path!r}")
    if path == "stratacl":
        import stratacl.torch
        stratacl.torch.use_heap_allocator()
    return Comm(path, gloo if path == "gloo" else dist.group.WORLD)


def run_steps(step, comm, warmup, steps, start=0):
    """Runs the steps; returns their losses and per-step records (seconds per phase, exposed
    per phase, total)."""
    losses, records = [], []
    for i in range(start, start + warmup + steps):
        dist.barrier(group=comm.group)
        comm.reset()
        t0 = time.perf_counter()
        loss, phases = step(i)
        total = time.perf_counter() - t0
        losses.append(loss)
        if i >= start + warmup:
            records.append({"total": total, "phases": phases, "exposed": dict(comm.exposed)})
    return losses, records


def breakdown(records, local_records=None):
    """Medians in ms: total, p90, each phase's compute (its wall time less its exposed
    communication) and the exposed communication. With `local_records` (the same steps under
    no_sync), backward's excess over them counts as exposed too."""
    med = lambda xs: 1e3 * statistics.median(xs)  # noqa: E731
    totals = sorted(r["total"] for r in records)
    out = {"iter_ms": med(totals), "iter_p90_ms": 1e3 * totals[int(0.9 * (len(totals) - 1))]}
    exposed = 0.0
    for ph in PHASES:
        wall = med([r["phases"].get(ph, 0.0) for r in records])
        comm = med([r["exposed"].get(ph, 0.0) for r in records])
        if ph == "backward" and local_records:
            local = med([r["phases"]["backward"] - r["exposed"].get("backward", 0.0)
                         for r in local_records])
            comm = max(comm, wall - local)
        out[ph + "_ms"] = wall - comm
        exposed += comm
    out["exposed_ms"] = exposed
    out["exposed_share"] = exposed / out["iter_ms"] if out["iter_ms"] else 0.0
    # Outside the phases: making the step's batch. (Medians of parts need not add up to the
    # median of the whole.)
    out["other_ms"] = med([r["total"] - sum(r["phases"].values()) for r in records])
    return out


def replicas_differ(params, group):
    """How many elements of the parameters every rank should hold alike differ from rank 0's."""
    params = list(params)
    if not params:
        return 0
    flat = torch.cat([p.detach().flatten() for p in params])
    first = flat.clone()
    dist.broadcast(first, 0, group=group)
    wrong = torch.tensor([int((bits(first) != bits(flat)).sum())])
    dist.all_reduce(wrong, group=group)
    return int(wrong[0])


def slowest(result, group):
    """The result of the rank whose median iteration was the slowest (a step is as slow as its
    slowest rank), all of it, so that its parts belong together."""
    everyone = [None] * dist.get_world_size(group)
    dist.all_gather_object(everyone, result, group=group)
    return max(everyone, key=lambda r: r["iter_ms"])


def mean_losses(losses, group, data_parallel):
    """The loss curve: per step, the mean over the data-parallel ranks (each computed its own
    batch's) of float64 copies, summed in rank order."""
    everyone = [None] * dist.get_world_size(group)
    dist.all_gather_object(everyone, losses, group=group)
    if not data_parallel:
        return everyone[0]
    return [sum(r[i] for r in everyone) / len(everyone) for i in range(len(losses))]


def compare_curves(curves, exact, rtol):
    """Problems found comparing every path's loss curve with the first's."""
    (base_path, base), bad = curves[0], []
    for path, curve in curves[1:]:
        for i, (a, b) in enumerate(zip(base, curve)):
            if (a != b) if exact else abs(a - b) > rtol * abs(a):
                bad.append(f"{path}: step {i}: loss {b!r} against {base_path}'s {a!r}")
                break
    return bad


def measure(step, comm, gloo, a, replicated, no_sync, data_parallel, items, unit):
    """Times the steps (and, with a `no_sync` context factory, DDP's share), checks the
    replicas: (result, loss curve). `items` per step, counted as `unit` per second."""
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    losses, records = run_steps(lambda i: step(i, True), comm, a.warmup, a.steps)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / (a.warmup + a.steps)
    differ = replicas_differ(replicated, gloo)
    local = None
    if no_sync is not None:
        # The timed steps' batches again (after one of the warm-up's), without DDP's allreduces
        # and without updates. DDP's own bucket copies and averaging are skipped too, and so
        # count as its exposed communication.
        warm = min(1, a.warmup)
        with no_sync():
            _, local = run_steps(lambda i: step(i, False), comm, warm, a.steps,
                                 start=a.warmup - warm)
    result = breakdown(records, local)
    result["page_faults_per_step"] = faults  # memory the step touched afresh
    result = slowest(result, gloo)
    result[unit + "_per_s"] = items / (result["iter_ms"] / 1e3)
    result["replicas_differ"] = differ
    return result, mean_losses(losses, gloo, data_parallel)


def timed_phases(comm, forward, backward, optimize):
    """Runs a step's three parts, each under its phase: (loss, {phase: seconds}). `forward`
    returns the loss tensor; `optimize` is None for a step that only computes gradients."""
    t0 = time.perf_counter()
    comm.phase = "forward"
    loss = forward()
    t1 = time.perf_counter()
    comm.phase = "backward"
    backward(loss)
    t2 = time.perf_counter()
    comm.phase = "optimizer"
    if optimize is not None:
        optimize()
    t3 = time.perf_counter()
    return loss.item(), {"forward": t1 - t0, "backward": t2 - t1, "optimizer": t3 - t2}


def main(a, name, train):
    """Trains on --path, or with --check on every path, comparing the loss curves;
    train(a, path, gloo, rank, size) -> (result, curve). Exits."""
    rank, size, gloo = init(a.init_method)
    paths = ("gloo", "buffered", "stratacl") if a.check else (a.path,)
    curves, status = [], 0
    for path in paths:
        result, curve = train(a, path, gloo, rank, size)
        curves.append((path, curve))
        emit(rank, (name, path, size, a.repeat), result)
        if rank == 0:
            print(f"{name} {path}: {result['iter_ms']:.1f} ms/iteration, exposed communication "
                  f"{100 * result['exposed_share']:.1f}%, loss {curve[0]:.4f} -> {curve[-1]:.4f}",
                  file=sys.stderr, flush=True)
        if result["replicas_differ"]:
            print(f"{name} {path}: {int(result['replicas_differ'])} replicated parameter "
                  "elements differ across ranks", file=sys.stderr, flush=True)
            status = 1
    if a.check:
        exact = size <= 2
        bad = compare_curves(curves, exact, a.rtol)
        if rank == 0:
            agree = "identical (bitwise)" if exact else f"within {a.rtol:g}"
            print("check: " + ("FAILED: " + "; ".join(bad) if bad else
                               f"{len(curves[0][1])} steps: loss curves {agree} across "
                               f"{', '.join(paths)}"), flush=True)
        status = status or int(bool(bad))
    launch.leave(status)


def common_args(p):
    p.add_argument("--path", choices=PATHS, default="stratacl")
    p.add_argument("--check", action="store_true", help="every path; loss curves compared "
                   "(bitwise on 2 ranks, else within --rtol)")
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--steps", type=int, default=20, help="timed steps")
    p.add_argument("--warmup", type=int, default=3, help="steps before the timed ones")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=1, help="written into the CSV rows")
    p.add_argument("--init-method", help="torch's; default: env:// under torchrun, else a file "
                   "store named after stratarun's job")


def check_args(p, a):
    if a.steps < 1 or a.warmup < 0:
        p.error("--steps must be positive and --warmup not negative")


def emit(rank, fields, metrics):
    """Rank 0 prints one CSV row per metric: trainer,path,ranks,repeat,metric,value (the
    trainer named with its mode: gpt-tp, dlrm)."""
    if rank == 0:
        for k, v in metrics.items():
            print(",".join(str(f) for f in fields) + f",{k},{v:.6g}", flush=True)


