#!/usr/bin/python3
"""The torch-level table of a bench/compare run: StrataCL's torch backend against torch's gloo.

    bench/compare -n 2 -L torch-gloo,torch-stratacl,torch-stratacl-heap -o OUT.csv
    bench/torch_report.py OUT.csv

For every collective and size: the median time (us) over the repeats of torch-gloo,
torch-stratacl (torch's own tensors, staged by StrataCL) and torch-stratacl-heap (tensors from
StrataCL's heap, zero copy), their speed-ups over gloo, and the target for the heap
column: >= 10x gloo up to 16 MiB, >= 4x above. Sizes gloo has no call for (reduce_scatter in
torch 1.13) have no ratio.
"""
import collections
import csv
import statistics
import sys

LIBS = ["torch-gloo", "torch-stratacl", "torch-stratacl-heap"]


def target(nbytes):
    return 10.0 if nbytes <= 16 << 20 else 4.0


def size_text(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d%s" % (n >> shift, unit)
    return str(n)


def main(path):
    times = collections.defaultdict(list)
    ranks = set()
    for row in csv.reader(open(path)):
        if len(row) != 7 or row[0] not in LIBS:
            continue
        lib, coll, n, nbytes, t_us = row[0], row[1], int(row[2]), int(row[3]), float(row[4])
        times[(coll, nbytes, lib)].append(t_us)
        ranks.add(n)
    met = missed = 0
    print("torch.distributed, %s ranks: median time (us); x = gloo time / StrataCL time; "
          "target for heap: >= 10x up to 16M, >= 4x above" % ",".join(map(str, sorted(ranks))))
    for coll in ("allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast"):
        sizes = sorted({s for (c, s, _) in times if c == coll})
        if not sizes:
            continue
        print("\n%s\n%8s %11s %11s %11s %8s %8s  %s" % (coll, "bytes", "gloo", "stratacl",
                                                   "heap", "x staged", "x heap", "target"))
        for s in sizes:
            med = {lib: statistics.median(times[(coll, s, lib)]) if times[(coll, s, lib)]
                   else None for lib in LIBS}
            gloo = med["torch-gloo"]

            def ratio(lib):
                return gloo / med[lib] if gloo and med[lib] else None

            def fmt(v, f):
                return f % v if v is not None else "-"

            heap_x = ratio("torch-stratacl-heap")
            if heap_x is None:
                verdict = "(no gloo call)"
            elif heap_x >= target(s):
                verdict, met = "met (%.0fx)" % target(s), met + 1
            else:
                verdict, missed = "MISSED (%.0fx)" % target(s), missed + 1
            print("%8s %11s %11s %11s %8s %8s  %s" % (
                size_text(s), fmt(gloo, "%.1f"), fmt(med["torch-stratacl"], "%.1f"),
                fmt(med["torch-stratacl-heap"], "%.1f"), fmt(ratio("torch-stratacl"), "%.1f"),
                fmt(heap_x, "%.1f"), verdict))
    print("\ntarget met at %d sizes, missed at %d" % (met, missed))


if __name__ == "__main__":
    main(sys.argv[1])
