#!/usr/bin/env python3
"""How busy the link between hosts is, for a bench/compare --hosts CSV.

    bench/link_report.py bench/results/hosts-2x2.csv [--min-bytes 1M]

For each library, collective and size: the bytes each host must send to the others at the least
(S the nccl-tests size of the row, H hosts: allreduce 2(H-1)/H x S, broadcast S, the others
(H-1)/H x S), divided by the link's own speed (link_gbs in the CSV header: one TCP stream, which
bench/compare measures first) and by the median time of the row. 100% is a link kept busy in one
direction the whole call at the speed one stream gets alone.
"""
import argparse
import collections
import re
import statistics
import sys

MOVED = {"allreduce": lambda h: 2 * (h - 1) / h, "broadcast": lambda h: 1.0}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("csv")
    p.add_argument("--min-bytes", type=int, default=1 << 20)
    a = p.parse_args()
    header = open(a.csv).readline()
    hosts = int(re.search(r"hosts=(\d+)", header).group(1))
    link = float(re.search(r"link_gbs=([0-9.]+)", header).group(1))
    times = collections.defaultdict(list)
    for line in open(a.csv):
        f = line.strip().split(",")
        if line.startswith("#") or f[0] in ("library", "memcpy") or len(f) < 7:
            continue
        if int(f[3]) >= a.min_bytes:
            times[(f[1], int(f[3]), f[0])].append(float(f[4]))
    libs = sorted({k[2] for k in times})
    print(f"link busy share (hosts={hosts}, link {link} GB/s one stream):")
    print(f"{'collective':<15}{'bytes':>10} " + " ".join(f"{l:>16}" for l in libs))
    for coll, size in sorted({(k[0], k[1]) for k in times}):
        moved = MOVED.get(coll, lambda h: (h - 1) / h)(hosts) * size
        cells = []
        for lib in libs:
            t = times.get((coll, size, lib))
            cells.append(f"{100 * moved / (link * 1e3 * statistics.median(t)):15.0f}%" if t else
                         f"{'-':>16}")
        print(f"{coll:<15}{size:>10} " + " ".join(cells))


if __name__ == "__main__":
    sys.exit(main())
