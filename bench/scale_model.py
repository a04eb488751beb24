#!/usr/bin/python3
"""Analytic scale model of StrataCL's collectives across hosts (docs/SCALE-MODEL.md).

    /usr/bin/python3 bench/scale_model.py [CSV...] [--runs DIR] [--calibrate CSV]
        [--tau-from CSV] [--local L=CSV]... [--excess-from CSV] [--o-us US] [--rescale-link]
        [--step-us US] [--busiest-core] [--no-plot] [--out TXT]

Calibrates the network parameters (alpha, o, beta) on the 2-host x 1-rank run of a measurement
set (default bench/results/scale-model-runs/, made by its run.sh in one sitting), the turn cost
tau on its 2 x 2 run, and validates the model on every other bench/compare run across hosts in
the set (hosts-<H>x<L>.csv, the layout read from the name): per layout, collective and size,
the measured time of StrataCL (stratacl-heap, median of the repeats) against the prediction, a
summary, and then the predictions for larger machines (bench/scale_predict.py). Writes the text
to --out (default bench/results/scale-model.txt) and the plot predicted against measured to
bench/results/scale-model-validation.png (gnuplot, bench/scale_plot.py). Python 3 stdlib only.

Model of one call (µs; sizes in bytes; bandwidths in GB/s = 1000 bytes/µs):
  T = local phases + copies and reductions + per network round (alpha + o x c x messages)
      + bytes on the wire / beta + per wait tau x (c - 1)
local phases come from measured single-host runs (testbed) or a formula (other machines);
c is the CPU contention where ranks share cores.
"""
import argparse
import csv
import math
import os
import re
import statistics
import sys

# The library's thresholds and choices.
from scale_rules import (BY_RAIL_MAX, DIRECT_MAX, DOUBLING_MIN_HOSTS, ES,
                         one_sided, SG_MAX_ROUND, SG_MIN_HOSTS,
                         SPLIT_BCAST_MIN_BLOCK, SPLIT_MIN_REDUNDANT, SPREAD_MIN_HOSTS,
                         allreduce_halves_pay,
                         alltoall_in_rounds, alltoall_rounds, chain_segments, gather_rounds,
                         halving_rounds, tree_radix)
import scale_report  # the validation's text (beside this file)

COLLS = ("allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast")
BIMODAL_BELOW = 256 << 10    # below this, with more ranks than cores: the shared-core band
LIB = "stratacl-heap"
HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
RUNS = os.path.join(RESULTS, "scale-model-runs")  # the same-day measurement set


class Fabric:
    """One kind of machine. alpha: µs per network round (wire latency); o: µs of CPU per
    message a rank posts or completes; beta_host: GB/s a host sends (one direction) over its
    link(s); beta_rank: GB/s one rank sends (a device's own link; a CPU host's ranks share
    one NIC, which any of them can fill); beta_shared: GB/s all hosts together move (the
    testbed, whose hosts share 2 cores); cores: cores per contention domain (the machine on the testbed, else a host);
    mem: GB/s one rank copies; local(coll, size, L): µs of an uncontended single-host call."""

    def __init__(self, name, alpha, o, beta_host=math.inf, beta_shared=math.inf, cores=1,
                 shared_cpu=False, mem=19.4, local=None, lam=0.0, beta_loc=math.inf, tau=0.0,
                 beta_rank=math.inf):
        self.name, self.alpha, self.o, self.tau = name, alpha, o, tau
        self.beta_host, self.beta_shared, self.beta_rank = beta_host, beta_shared, beta_rank
        self.cores, self.shared_cpu, self.mem, self.local = cores, shared_cpu, mem, local
        self.lam, self.beta_loc = lam, beta_loc  # intra-host step (µs) and rate, peers' models

    busiest_core = False  # --busiest-core: the contention of the testbed's busiest core
    # Calls back to back, as bench/compare times them (the testbed): a broadcast's root goes on
    # to its next call once it has sent, so a tree's later rounds overlap the next call's first
    # and cost their messages, not their latency. Off, every round's latency counts: a call
    # timed alone, as the predictions compare them.
    back_to_back = False

    def crowd(self, hosts, active):
        """Contention: ranks busy at once per core of their domain (at least 1): the mean, or
        with busiest_core the busiest core's count, ceil(busy / cores): a rank is not split."""
        busy = hosts * active if self.shared_cpu else active
        per_core = busy / self.cores
        return max(1.0, math.ceil(per_core) if self.busiest_core else per_core)

    def with_(self, **kw):
        f = Fabric(self.name, self.alpha, self.o)
        f.__dict__.update(self.__dict__)
        f.__dict__.update(kw)
        return f


def us(nbytes, gbs):
    return nbytes / (gbs * 1e3) if gbs != math.inf else 0.0


def strata(coll, S, H, L, f):
    """StrataCL's time for one call of nccl-tests size S on H hosts x L ranks: {term: µs}.
    The algorithms of src/hier/*.cc over src/net/rail.cc, as docs/SCALE-MODEL.md lists them."""
    t = dict(alpha=0.0, msgs=0.0, wire=0.0, local=0.0, mem=0.0, turns=0.0)
    P, b = H * L, S / (H * L)
    if H == 1:  # one host: the single-host library, no network
        t["local"] = f.local(coll, S, L)
        return t
    lc = f.crowd(H, L) / max(1.0, L / f.cores) if f.shared_cpu else 1.0

    def turn(act):  # a wait for another rank, which may be queued behind others on its core
        t["turns"] += f.tau * (f.crowd(H, act) - 1)

    def rnd(msgs, host, total, act, xfer, latency=True, senders=1):  # one network round
        # msgs: the busiest rank's; host: bytes the busiest host sends, spread over its act
        # sending ranks; total: all hosts'; latency: whether its latency adds to the call's;
        # senders: the most ranks a rank hears from at once (from 3, the one-sided size falls to
        # the threshold over min(senders, 4))
        t["alpha"] += f.alpha * (2 if one_sided(xfer, senders) else 1) * latency
        t["msgs"] += f.o * msgs * f.crowd(H, act)
        t["wire"] += max(us(host, f.beta_host), us(host / act, f.beta_rank),
                         us(total, f.beta_shared))
        turn(act)

    def local(c, size):
        t["local"] += f.local(c, size, L) * lc
        turn(L)

    def local_runs(c, size, runs):  # one step of `runs` runs (Call::runs): one step's fixed
        # cost (the phase's time at no bytes) and every run's bytes, as `runs` phases would move
        t["local"] += (runs * f.local(c, size / runs, L) - (runs - 1) * f.local(c, 0, L)) * lc
        turn(L)

    def copy(nbytes, act):
        t["mem"] += us(nbytes, f.mem) * f.crowd(H, act)

    def reduce(k, nbytes, act):  # k inputs into one: (k + 1) / 2 copies' worth of traffic
        t["mem"] += (k + 1) / 2 * us(nbytes, f.mem) * f.crowd(H, act)

    def gather_in_rounds(block):  # Bruck's gather: min(2^k, H - 2^k) blocks in round k
        for c in gather_rounds(H):
            rnd(2, L * c * block, P * c * block, L, block)

    def reduce_scatter_in_rounds(part):  # Bruck's backwards: m parts in, packed where m > 1
        for m in halving_rounds(H):
            copy(m * part if m > 1 else 0, L)
            rnd(2, L * m * part, P * m * part, L, part)  # one-sided or not by one part
            reduce(2, m * part, L)

    rounds = H >= DOUBLING_MIN_HOSTS  # small calls in rounds: doubling, else Bruck's
    doubling = rounds and H & (H - 1) == 0  # a power of two
    if coll == "allreduce":
        # hier/allreduce.cc: a small buffer stays whole on every rail unless the copies the
        # rails send alike reach SPLIT_MIN_REDUNDANT; otherwise each rail reduces its S/L shard,
        # which net::Rail::allreduce takes in a direct round or by doubling while it is at most
        # DIRECT_MAX (in Bruck's rounds where H shards total at most that, else in halves, the
        # reduce-scatter's rounds and the gather's, where allreduce_halves_pay), and above by the
        # ring over hosts, or in two direct rounds (scatter, then gather) from SG_MIN_HOSTS hosts
        # while H - 1 chunks are at most SG_MAX_ROUND.
        copies = int(math.log2(H)) if doubling else H - 1  # Rail::small_allreduce_copies
        split = S > DIRECT_MAX or ((L - 1) * S * copies >= SPLIT_MIN_REDUNDANT and S / ES >= L)
        x = S / L if split else S  # what each rail reduces
        if L > 1:  # alone on its host, a rank's rail reads its input where it is: no local step
            local("reduce_scatter" if split else "allreduce", S)
        if not split and L > 1 and H >= SPREAD_MIN_HOSTS:
            # spread over the host's ranks: local rank l sends the host's sum to the hosts l + 1,
            # l + 1 + L, ... on, ceil((H - 1) / L) messages each way; a local allgather of the
            # sums (and a result word each); every rank reduces the H sums in host order
            runs = -(-(H - 1) // L)
            rnd(2 * runs, (H - 1) * S, H * (H - 1) * S, min(L, H - 1), S, senders=runs)
            local("allgather", L * (runs * S + 8))
            reduce(H, S, L)
        elif x > DIRECT_MAX and H >= SG_MIN_HOSTS and (H - 1) * (x / H) <= SG_MAX_ROUND:
            for _ in range(2):  # chunk h to host h, reduced there; the results back to all
                rnd(2 * (H - 1), (H - 1) * S / H, (H - 1) * S, L, x / H, senders=H - 1)
            reduce(H, x / H, L)
        elif x > DIRECT_MAX:
            for _ in range(2 * (H - 1)):  # ring reduce-scatter, then ring allgather
                rnd(2, S / H, S, L, x / H)
            reduce(2, x / H * (H - 1), L)
        elif doubling:  # log2 H rounds of one message each way
            for _ in range(int(math.log2(H))):
                rnd(2, L * x, H * L * x, L, x)
                reduce(2, x, L)
        elif rounds and H * x <= DIRECT_MAX:  # Bruck's gather of the inputs, reduced in host order
            copy(x, L)
            gather_in_rounds(x)
            reduce(H, x, L)
        elif rounds and allreduce_halves_pay(H, L, x):
            # In halves: the reduce-scatter's rounds over H chunks, then the gather's.
            reduce_scatter_in_rounds(x / H)
            gather_in_rounds(x / H)
            copy(x, L)
        else:
            rnd(2 * (H - 1), L * (H - 1) * x, H * L * (H - 1) * x, L, x, senders=H - 1)
            reduce(H, x, L)
        if split and L > 1:
            local("allgather", S)
    elif coll == "allgather":
        copy(b, L)
        if rounds and H * b <= DIRECT_MAX:  # gathered in the rail's scratch, copied out
            # by doubling, 2^k blocks in round k; by Bruck's rounds, min(2^k, H - 2^k)
            gather_in_rounds(b)
            copy((H - 1) * b, L)
        else:
            rnd(2 * (H - 1), L * (H - 1) * b, P * (H - 1) * b, L, b, senders=H - 1)
        if L > 1:  # one local allgather of H runs, one per host's blocks, in place
            local_runs("allgather", S, H)
    elif coll == "reduce_scatter":
        if L > 1 and H >= SPREAD_MIN_HOSTS and S <= DIRECT_MAX and not rounds:
            # spread over the host's ranks (hier/reduce_scatter.cc): a local allreduce of the
            # whole input; local rank l sends the host's partials for the hosts l + 1, l + 1 + L,
            # ... on (L blocks each), ceil((H - 1) / L) messages each way; a local allgather of
            # them (and a result word each); every rank reduces its block of the H partials
            runs = -(-(H - 1) // L)
            local("allreduce", S)
            rnd(2 * runs, (H - 1) * L * b, H * (H - 1) * L * b, min(L, H - 1), L * b,
                senders=runs)
            local("allgather", L * (runs * L * b + 8))
            reduce(H, b, L)
            return t
        if L > 1:  # one local reduce-scatter of H runs, one per host's range of the input
            local_runs("reduce_scatter", S, H)
        if rounds and H * b <= DIRECT_MAX:  # Bruck's rounds backwards: parts reduced on the way
            reduce_scatter_in_rounds(b)
        else:
            rnd(2 * (H - 1), L * (H - 1) * b, P * (H - 1) * b, L, b, senders=H - 1)
            reduce(H, b, L)
    elif coll == "alltoall" and alltoall_in_rounds(H, L, L * b):
        # In rounds (Bruck's): the local step packs as by rail (alone on its host, a rank copies
        # its input), then each round sends its slots packed in one message; the blocks are
        # copied out of the rail's scratch at the end.
        local("alltoall", S) if L > 1 else copy(S, 1)
        for m in alltoall_rounds(H):
            copy(m * L * b, L)
            rnd(2, L * m * L * b, P * m * L * b, L, 0)
        copy((H - 1) * L * b, L)
    elif coll == "alltoall" and L > 1 and L * b <= BY_RAIL_MAX:
        # By rail: one local step gathers each rank's whole output (its host's blocks and one
        # pack of L blocks per other host), then one message per other host (two-sided: a pack
        # stays below the one-sided size).
        local("alltoall", S)
        rnd(2 * (H - 1), L * (H - 1) * L * b, P * (H - 1) * L * b, L, 0)
    elif coll == "alltoall":
        local("alltoall", L * b) if L > 1 else copy(b, 1)
        # a block per remote rank, one-sided from its size on (Rail::exchange_even)
        rnd(2 * (P - L), L * (P - L) * b, P * (P - L) * b, L, b, senders=P - L)
    elif coll == "broadcast":
        # hier/broadcast.cc: from blocks of SPLIT_BCAST_MIN_BLOCK, split over the rails (the
        # root's host scatters, each rail broadcasts its block, every host allgathers); else the
        # root's rail carries S and each host broadcasts it. The rails go down the chain of hosts
        # where net::Rail::chain_segments says so for S, in its segment count, else down a tree of
        # hosts (net::Rail::tree_radix: flat below 4 hosts).
        split = L > 1 and S / L >= SPLIT_BCAST_MIN_BLOCK
        x, act = (S / L, L) if split else (S, 1)
        if not split:  # the root's copy, out of place (split, it scatters from its input)
            copy(S, 1)
        k = tree_radix(S, H)  # the whole buffer's: the rails share the host's link
        n = chain_segments(S, H, k)
        if split:  # the scatter, on the root's host only: each rank copies its block
            t["mem"] += us(x, f.mem) * f.crowd(1, L)
            turn(L)
        if n:  # down the chain of hosts: per batch, a segment on and the next one in
            for r in range(n + H - 2):  # places q send segment r - q, where 0 <= r - q < n
                senders = min(r, H - 2) - max(0, r - n + 1) + 1
                rnd(2, act * x / n, senders * act * x / n, act, x / n)
        else:  # a tree of radix k: per round, each host that has the buffer sends k - 1 copies
            span = 1
            while span < H:
                copies = min(k - 1, (H - 1) // span)  # the root's, the busiest sender's
                rnd(copies, copies * S, min(H - span, (k - 1) * span) * S, act, x,
                    span == 1 or not f.back_to_back)
                span *= k
        if L > 1:
            local("allgather" if split else "broadcast", S)
    return t


# --- measured data ------------------------------------------------------------------------------

def load(path, lib=LIB):
    """(header fields, {(coll, bytes): [time_us per repeat]}, memcpy GB/s) of a compare CSV."""
    with open(path) as fh:
        lines = fh.read().splitlines()
    head = dict(re.findall(r"(\w+)=(\S+)", lines[0])) if lines and lines[0].startswith("#") else {}
    rows, mem = {}, []
    for r in csv.reader(l for l in lines if l and not l.startswith("#")):
        if r[0] == lib:
            rows.setdefault((r[1], int(r[3])), []).append(float(r[4]))
        elif r[0] == "memcpy":
            mem.append(float(r[5]))
    return head, rows, (statistics.median(mem) if mem else 19.4)


def measured_local(paths):
    """local(coll, size, L) from single-host runs: median time, log-log interpolation in size
    (linear in size beyond the largest, the smallest's time below the smallest)."""
    tables = {}
    for L, path in paths.items():
        _, rows, _ = load(path)
        for (c, s), ts in rows.items():
            tables.setdefault((L, c), []).append((s, statistics.median(ts)))
    for v in tables.values():
        v.sort()

    def local(coll, size, L):
        pts = tables.get((L, coll))
        if not pts:
            raise SystemExit(f"scale_model: no single-host {coll} run of {L} ranks (--local)")
        if size <= pts[0][0]:
            return pts[0][1]
        for (s0, t0), (s1, t1) in zip(pts, pts[1:]):
            if size <= s1:
                w = math.log(size / s0) / math.log(s1 / s0)
                return math.exp((1 - w) * math.log(t0) + w * math.log(t1))
        return pts[-1][1] * size / pts[-1][0]
    return local


def testbed(alpha, o, beta, head, mem, local, tau=0.0):
    f = Fabric("testbed", alpha, o, beta_shared=beta, cores=int(head.get("cores", 2)),
               shared_cpu=True, mem=mem, local=local, tau=tau)
    f.back_to_back = head.get("between_barriers") != "1"
    return f


def total(t):
    return sum(t.values())


def calibrate(path, local):
    """alpha and o from the sizes up to 512 B (least squares; the run's first row, allreduce at
    its smallest size, is left out: a launch's first row is sometimes slow), then beta from
    the sizes from 2 MiB (median of each point's beta after the modelled other terms)."""
    head, rows, mem = load(path)
    H, L = int(head.get("hosts", 2)), int(head["ranks"]) // int(head.get("hosts", 2))
    first = min(s for c, s in rows if c == "allreduce")
    small = [(k, v) for k, v in rows.items() if k[1] <= 512 and k != ("allreduce", first)]
    sums = [0.0] * 5  # AA, AB, BB, Ay, By of the normal equations
    for (c, s), ts in small:
        f0 = testbed(0, 0, math.inf, head, mem, local)
        t0 = total(strata(c, s, H, L, f0))
        a = total(strata(c, s, H, L, f0.with_(alpha=1.0))) - t0
        b = total(strata(c, s, H, L, f0.with_(o=1.0))) - t0
        y = statistics.median(ts) - t0
        for i, v in enumerate((a * a, a * b, b * b, a * y, b * y)):
            sums[i] += v
    det = sums[0] * sums[2] - sums[1] ** 2
    alpha = (sums[3] * sums[2] - sums[1] * sums[4]) / det
    o = (sums[0] * sums[4] - sums[1] * sums[3]) / det
    betas = []
    for (c, s), ts in rows.items():
        if s >= 2 << 20:
            f = testbed(alpha, o, math.inf, head, mem, local)
            rest = total(strata(c, s, H, L, f))
            wire1 = total(strata(c, s, H, L, f.with_(beta_shared=1.0))) - rest  # µs at 1 GB/s
            if statistics.median(ts) > rest:
                betas.append(wire1 / (statistics.median(ts) - rest))
    beta = statistics.median(betas)
    return dict(alpha=alpha, o=o, beta=beta, link=float(head.get("link_gbs", 0) or 0), mem=mem,
                small=len(small), large=len(betas), beta_range=(min(betas), max(betas)),
                path=path)


def run_model(path, cal, local):
    """(H, L, rows, fabric) of one run: the calibration's parameters; with cal["rescale"], beta
    rescaled by the run's own one-stream link speed (link_gbs in its header) over the
    calibration run's, for runs of other days (one short stream, so noisier than the same-day
    set needs: there it moved 2.0-2.9 GB/s within ten minutes)."""
    H, L = layout_of(path)
    head, rows, mem = load(path)
    if int(head.get("ranks", H * L)) != H * L or int(head.get("hosts", H)) != H:
        raise SystemExit(f"scale_model: {path}: header says ranks={head.get('ranks')} "
                         f"hosts={head.get('hosts')}, not {H}x{L}")
    link = float(head.get("link_gbs", 0) or 0)
    rescale = cal.get("rescale") and link and cal["link"]
    beta = cal["beta"] * (link / cal["link"] if rescale else 1.0)
    return H, L, rows, testbed(cal["alpha"], cal["o"], beta, head, mem, local, cal.get("tau", 0))


def shared_core(path, cal, local):
    """tau, the cost of one wait's turn on a shared core: least squares over the points under
    256 KiB of one run with more ranks than cores (path), every other parameter fixed."""
    H, L, rows, f = run_model(path, cal, local)
    f = f.with_(tau=0.0)
    sxx = sxy = 0.0
    for (c, s), ts in rows.items():
        if c not in COLLS or s >= BIMODAL_BELOW:
            continue
        t0 = total(strata(c, s, H, L, f))
        x = total(strata(c, s, H, L, f.with_(tau=1.0))) - t0
        sxx, sxy = sxx + x * x, sxy + x * (statistics.median(ts) - t0)
    if sxx == 0:
        raise SystemExit(f"scale_model: {path} has no point with ranks waiting on shared cores")
    return dict(tau=sxy / sxx, tau_path=path)


def layout_of(path):
    m = re.search(r"hosts-(\d+)x(\d+)\.csv$", path)
    if not m:
        raise SystemExit(f"scale_model: {path}: not a hosts-<H>x<L>.csv run")
    return int(m.group(1)), int(m.group(2))


# --- validation ---------------------------------------------------------------------------------

def validate(paths, cal, local):
    """Rows (layout, coll, size, median, fastest, predicted, err %, note) of every run. note:
    cal (the run alpha, o and beta were fitted on), tau (the run tau was fitted on), shared (more
    ranks than cores, under 256 KiB: where tau counts), or empty."""
    out = []
    for path in paths:
        H, L, rows, f = run_model(path, cal, local)
        fitted = {os.path.abspath(cal["tau_path"]): "tau", os.path.abspath(cal["path"]): "cal"}
        for (c, s) in sorted(rows, key=lambda k: (COLLS.index(k[0]) if k[0] in COLLS else 9,
                                                   k[1])):
            if c not in COLLS:
                continue
            ts = rows[(c, s)]
            pred = total(strata(c, s, H, L, f))
            med = statistics.median(ts)
            note = fitted.get(os.path.abspath(path),
                              "shared" if H * L > f.cores and s < BIMODAL_BELOW else "")
            out.append((f"{H}x{L}", c, s, med, min(ts), pred, 100 * (pred - med) / med, note))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="*",
                    help="hosts-<H>x<L>.csv runs (default: every one in --runs)")
    ap.add_argument("--runs", default=RUNS, help="the measurement set (default %(default)s)")
    ap.add_argument("--calibrate", help="the 2x1 run to calibrate on (default: the set's)")
    ap.add_argument("--tau-from", help="the run to fit tau on (default: the set's 2x2)")
    ap.add_argument("--local", action="append", default=[], metavar="L=CSV",
                    help="single-host bench/compare run of L ranks for the local phases "
                         "(default: the set's local-<L>.csv)")
    ap.add_argument("--excess-from", default=os.path.join(RESULTS, "calibration-hosts-2x1.csv"),
                    help="a 2x1 run of StrataCL and Open MPI: the per-message excess that sets o "
                         "on the RDMA fabrics")
    ap.add_argument("--o-us", type=float, help="per-message cost on the RDMA fabrics (predictions)")
    ap.add_argument("--rescale-link", action="store_true",
                    help="scale beta by each run's link_gbs (runs of other days)")
    ap.add_argument("--step-us", type=float,
                    help="the CPU hosts' intra-host step for the predictions (default: the set's "
                         "fastest 2-rank allreduce of 8-512 B)")
    ap.add_argument("--busiest-core", action="store_true",
                    help="the testbed's contention as its busiest core's ranks, not the mean")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--out", default=os.path.join(RESULTS, "scale-model.txt"))
    a = ap.parse_args()
    Fabric.busiest_core = a.busiest_core
    runs = {int(m.group(1)): os.path.join(a.runs, p) for p in os.listdir(a.runs)
            for m in [re.fullmatch(r"local-(\d+)\.csv", p)] if m}
    runs.update({int(k): v for k, v in (x.split("=", 1) for x in a.local)})
    local = measured_local(runs)
    paths = a.csv or sorted(os.path.join(a.runs, p) for p in os.listdir(a.runs)
                            if re.fullmatch(r"hosts-\d+x\d+\.csv", p))
    calibration = a.calibrate or os.path.join(a.runs, "hosts-2x1.csv")
    if os.path.abspath(calibration) not in map(os.path.abspath, paths):
        paths.insert(0, calibration)
    cal = calibrate(calibration, local)
    cal["rescale"] = a.rescale_link
    cal.update(shared_core(a.tau_from or os.path.join(a.runs, "hosts-2x2.csv"), cal, local))
    rows = validate(paths, cal, local)
    def timing(p):  # the model assumes bench/compare's default, calls back to back
        return "between barriers" if load(p)[0].get("between_barriers") == "1" else "back to back"
    out = [f"bench/scale_model.py: calibrated on {os.path.relpath(calibration, HERE)}, runs: "
           + ", ".join(f"{os.path.relpath(p, HERE)} ({timing(p)})" for p in paths), ""]
    scale_report.report(rows, cal, out)
    import scale_predict  # the larger machines (beside this file)
    out.append("")
    # The intra-host step: the fastest repeat of the 2-rank allreduces of 8-512 B. A launch's small
    # calls run in one of two states (docs/PERFORMANCE.md, "Small calls' launch states"): 512 B
    # took 0.79-0.84 µs in the fast one and 2.2-2.4 µs in the other, which held 4 of 5 launches of
    # one set; each rank on a core of its own, as predicted here, is the fast one.
    two = load(runs[2])[1]
    step = a.step_us or min(t for s in (8, 64, 512) for t in two[("allreduce", s)])
    scale_predict.report(cal, step, a.excess_from, out, a.o_us)
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    with open(a.out, "w") as fh:
        fh.write(text)
    if not a.no_plot:
        import scale_plot  # beside this file
        scale_plot.plot(rows, os.path.join(RESULTS, "scale-model-validation.png"))


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    main()
