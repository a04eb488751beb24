"""Predictions of the scale model (bench/scale_model.py, docs/SCALE-MODEL.md) for machines we do
not have: 8, 32 and 384 ranks, 8 per host, on a CloudMatrix384-class UB supernode and on 100 and
400 Gb/s RoCE Ethernet; StrataCL's algorithms beside the published algorithms of Open MPI's
tuned component (flat) and NCCL (ring and double binary tree), all on the same cost model.
Imported by bench/scale_model.py, which passes the calibration."""
import math
import statistics

from scale_model import Fabric, load, strata, total, us

SIZES = (8, 64 << 10, 1 << 20, 16 << 20, 256 << 20)
RANKS = (8, 32, 384)
PER_HOST = 8
VERBS_US = 0.2     # assumed: a verbs post plus its completion, per message
CPU_COPY = 10.0    # assumed: GB/s one rank copies when all 8 ranks of a host copy at once
UB_GBS = 392.0     # CloudMatrix384 paper: UB bandwidth per Ascend 910C, one direction
UB_US = 1.0        # same source: inter-node UB latency under 1 µs; taken as 1 µs
HBM_COPY = 1600.0  # an Ascend 910C's 3.2 TB/s HBM: half of it as a copy rate
ROCE_US = 3.0      # assumed one-way RoCE latency through a switch (published: 2-5 µs)


def fabric_local(lam, rate):
    """A single-host call on L ranks where we measured none: a synchronisation step per
    doubling of L, plus the memory traffic of bench/compare_report.py's model at `rate`, but
    for allgather, whose ranks read and write only the L - 1 blocks of others where it runs in
    place (the large allgather's phases, the split broadcast's)."""
    def local(coll, S, L):
        traffic = {"allreduce": S + S / L + 2 * (L - 1) * S / L,
                   "reduce_scatter": S + S / L,
                   "allgather": 2 * (L - 1) * S / L}.get(coll, 2 * S)
        return lam * math.ceil(math.log2(L)) + traffic / 2 / (rate * 1e3)
    return local


def fabrics(o, lam_cpu):
    """The machines, 8 ranks per host. o: µs per message (all libraries alike)."""
    ub = Fabric("CloudMatrix384 UB", UB_US, o, beta_host=PER_HOST * UB_GBS, cores=PER_HOST,
                mem=HBM_COPY, lam=UB_US + 2 * o, beta_loc=UB_GBS, beta_rank=UB_GBS)
    ub.local = fabric_local(ub.lam, UB_GBS)
    out = [ub]
    for gbits in (100, 400):
        f = Fabric(f"RoCE {gbits} Gb/s", ROCE_US, o, beta_host=gbits / 8, cores=PER_HOST,
                   mem=CPU_COPY, lam=lam_cpu, beta_loc=CPU_COPY)
        f.local = fabric_local(lam_cpu, CPU_COPY)
        out.append(f)
    return out


def log2c(x):
    return int(math.ceil(math.log2(x))) if x > 1 else 0


def step(f, H, L, cross, n, flows):
    """One synchronous step of a flat algorithm: each rank sends n bytes to one peer and
    receives as many; cross: the peer is on another host; flows: ranks per host crossing."""
    if H > 1 and cross:
        return f.alpha + 2 * f.o + max(us(flows * n, f.beta_host), us(n, f.beta_loc))
    return f.lam + us(n, f.beta_loc)


def red(f, n):  # reduce n bytes of two inputs into one
    return 1.5 * us(n, f.mem)


def ompi_allreduce(S, H, L, f):
    """Open MPI's tuned allreduce, flat over P ranks placed by host; the best of its recursive
    doubling, ring and Rabenseifner (vector halving, distance doubling). Ranks beyond a power
    of two fold in and out first (two steps of the whole buffer)."""
    P = H * L
    n = int(math.log2(P))
    fold = 2 * step(f, H, L, True, S, L) + red(f, S) if P != 2 ** n else 0.0
    rd = fold + sum(step(f, H, L, 2 ** k >= L, S, L) + red(f, S) for k in range(n))
    ring = 2 * (P - 1) * step(f, H, L, True, S / P, 1) + (P - 1) * red(f, S / P)
    rab = fold + sum(2 * step(f, H, L, 2 ** k >= L, S / 2 ** (k + 1), L) + red(f, S / 2 ** (k + 1))
                     for k in range(n))
    return min((rd, "rd"), (ring, "ring"), (rab, "rab"))


def ompi_allgather(S, H, L, f):
    """Open MPI's tuned allgather: the better of recursive doubling (log2 P steps, the block
    doubling) and the ring (P - 1 steps, one flow per host crossing)."""
    P = H * L
    rd = sum(step(f, H, L, 2 ** k >= L, min(2 ** k, P - 2 ** k) * S / P, L)
             for k in range(log2c(P)))
    ring = (P - 1) * step(f, H, L, True, S / P, 1)
    return min((rd, "rd"), (ring, "ring"))


def nccl_ring(S, H, L, f, hops, factor):
    """NCCL's ring: the chunks pipeline around P ranks, so its latency is one hop per step (H of
    every P hops on the network), its bandwidth that of the slowest link, factor x S."""
    P = H * L
    hop = ((P - H) * f.lam + H * (f.alpha + 2 * f.o)) / P if H > 1 else f.lam
    bw = max(us(factor * S, f.beta_host) if H > 1 else 0.0, us(factor * S, f.beta_loc))
    return hops * hop + bw


def nccl_allreduce(S, H, L, f):
    P = H * L
    ring = nccl_ring(S, H, L, f, 2 * (P - 1), 2 * (P - 1) / P) + red(f, S * (P - 1) / P)
    best = (ring, "ring")
    if H > 1:  # double binary tree over hosts, a chain within each: up, then down
        tree = 2 * (log2c(H) * (f.alpha + 2 * f.o) + (L - 1) * f.lam) \
            + max(us(2 * S, f.beta_host), us(2 * S, f.beta_loc)) + red(f, S)
        best = min(best, (tree, "tree"))
    return best


def nccl_allgather(S, H, L, f):
    P = H * L
    return nccl_ring(S, H, L, f, P - 1, (P - 1) / P), "ring"


def ompi_broadcast(S, H, L, f):
    """Open MPI's tuned broadcast, flat over P ranks placed by host: the better of the binomial
    tree (log2 P steps of the whole buffer, those of distance L and more across hosts) and the
    pipelined chain in the best of 1-1024 segments (chain_pipeline)."""
    P = H * L
    binomial = sum(step(f, H, L, 2 ** k >= L, S, L) for k in range(log2c(P)))
    return min([(binomial, "tree")] + [(chain_pipeline(S, H, L, f, n), "chain")
                                        for n in (2 ** i for i in range(11))])


def chain_pipeline(S, H, L, f, n):
    """A chain of P ranks passing n segments on: P - 2 + n steps, each the slower of a hop on
    the network and one within a host where both kinds are in the chain."""
    P = H * L
    cross = step(f, H, L, True, S / n, 1) if H > 1 else 0.0
    local = step(f, H, L, False, S / n, 1) if L > 1 else 0.0
    return (P - 2 + n) * max(cross, local)


def nccl_broadcast(S, H, L, f):
    P = H * L
    return nccl_ring(S, H, L, f, P - 1, 1.0), "ring"


def fmt(x):
    return f"{x:.3g}" if x < 1000 else f"{x:.0f}"


def size_name(s):
    for unit, k in (("MiB", 20), ("KiB", 10)):
        if s >= 1 << k:
            return f"{s >> k} {unit}"
    return f"{s} B"


def per_message(path):
    """StrataCL's small exchange at 2x1 against Open MPI's on the same kernel TCP path, in one
    run (`path`, both libraries): the excess per message (2 per round), median over the
    collectives at 8-512 B."""
    def small(lib):
        _, rows, _ = load(path, lib)
        first = min((s for c, s in rows if c == "allreduce"), default=0)
        return statistics.median(statistics.median(v) for (c, s), v in rows.items()
                                 if s <= 512 and c != "broadcast" and (c, s) != ("allreduce", first))
    return (small("stratacl-heap") - small("openmpi")) / 2


def report(cal, lam, excess_path, out, o_override=None):
    """lam: the intra-host step, µs (scale_model.py: the fastest 2-rank allreduce of 8-512 B)."""
    excess = per_message(excess_path)
    o = o_override if o_override is not None else excess + VERBS_US
    out.append(f"Predictions, {PER_HOST} ranks per host; every library on the same cost model. "
               f"o = {o:.2f} us per message ({'given' if o_override is not None else 'measured'}"
               f"{'' if o_override is not None else f': StrataCL excess over Open MPI per message at 2x1 {excess:.2f} us + verbs {VERBS_US} us'}); "
               f"intra-host step {lam:.2f} us (measured, 2 ranks); CPU copy {CPU_COPY} GB/s per rank.")
    fabs = fabrics(o, lam)
    for f in fabs:
        out.append(f"  {f.name}: alpha {f.alpha} us, host link {f.beta_host:g} GB/s per direction, "
                   f"intra-host {f.beta_loc:g} GB/s per rank, step {f.lam:.2f} us, copy {f.mem:g} GB/s")
    out.append("")
    out.append("Time per call (us). SCL = StrataCL; OMPI = Open MPI tuned (rd: recursive doubling, "
               "ring, rab: Rabenseifner); NCCL (ring, tree); x best = SCL / the faster peer.")
    out.append("%-18s %5s %8s | %9s %14s %11s %7s | %9s %11s %11s %7s" % (
        "fabric", "ranks", "size", "AR SCL", "AR OMPI", "AR NCCL", "x best",
        "AG SCL", "AG OMPI", "AG NCCL", "x best"))
    for f in fabs:
        for P in RANKS:
            H = P // PER_HOST
            for S in SIZES:
                cells = []
                for coll, peers in (("allreduce", (ompi_allreduce, nccl_allreduce)),
                                    ("allgather", (ompi_allgather, nccl_allgather))):
                    mine = total(strata(coll, S, H, PER_HOST, f))
                    res = [p(S, H, PER_HOST, f) for p in peers]
                    cells += [fmt(mine)] + [f"{fmt(t)} {a}" for t, a in res] + \
                             [f"{mine / min(t for t, _ in res):.2f}x"]
                out.append("%-18s %5d %8s | %9s %14s %11s %7s | %9s %11s %11s %7s" % (
                    f.name, P, size_name(S), *cells))
    out.append("")
    out.append("Broadcast, time per call (us): OMPI = Open MPI tuned (tree: binomial, chain: "
               "pipelined in segments); NCCL's ring; x best = SCL / the faster peer.")
    out.append("%-18s %5s %8s | %9s %11s %11s %7s" % (
        "fabric", "ranks", "size", "BC SCL", "BC OMPI", "BC NCCL", "x best"))
    for f in fabs:
        for P in RANKS:
            for S in SIZES:
                H = P // PER_HOST
                mine = total(strata("broadcast", S, H, PER_HOST, f))
                res = [p(S, H, PER_HOST, f) for p in (ompi_broadcast, nccl_broadcast)]
                out.append("%-18s %5d %8s | %9s %11s %11s %6.2fx" % (
                    f.name, P, size_name(S), fmt(mine), *[f"{fmt(t)} {a}" for t, a in res],
                    mine / min(t for t, _ in res)))
    out.append("")
    out.append("StrataCL at 384 ranks (48 hosts x 8), by term (us): alpha = rounds x latency, "
               "msgs = o x messages of the busiest rank, wire = bytes / link, local = the "
               "single-host phases, mem = copies and reductions; bound = the bytes a host must "
               "send at least / its link.")
    out.append("%-18s %-15s %8s %10s %9s %9s %10s %9s %9s %10s" % (
        "fabric", "collective", "size", "total", "alpha", "msgs", "wire", "local", "mem", "bound"))
    H, L = 384 // PER_HOST, PER_HOST
    least = {"allreduce": 2 * (H - 1) / H, "allgather": (H - 1) / H, "broadcast": 1.0,
             "reduce_scatter": (H - 1) / H, "alltoall": L * (H - 1) / H}
    for f in fabs[1:]:
        for coll in ("allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast"):
            for S in (8, 64 << 10, 16 << 20, 256 << 20):
                t = strata(coll, S, H, L, f)
                out.append("%-18s %-15s %8s %10s %9s %9s %10s %9s %9s %10s" % (
                    f.name, coll, size_name(S), fmt(total(t)), fmt(t["alpha"]), fmt(t["msgs"]),
                    fmt(t["wire"]), fmt(t["local"]), fmt(t["mem"]),
                    fmt(us(least[coll] * S, f.beta_host))))
    out.append("")
    out.append(f"Sensitivity to o: 384 ranks, RoCE 100 Gb/s, with o = {cal['o']:.2f} us (the tcp "
               f"path's, measured) instead of {o:.2f} us; time per call (us), SCL / OMPI / NCCL.")
    f = fabrics(cal["o"], lam)[1]
    for coll, peers in (("allreduce", (ompi_allreduce, nccl_allreduce)),
                        ("allgather", (ompi_allgather, nccl_allgather))):
        for S in (8, 64 << 10, 1 << 20):
            res = [fmt(p(S, H, L, f)[0]) for p in peers]
            out.append(f"  {coll:10s} {size_name(S):>7s}: "
                       f"{fmt(total(strata(coll, S, H, L, f)))} / {res[0]} / {res[1]}")
