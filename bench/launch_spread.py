#!/usr/bin/python3
"""Launch-to-launch spread of a bench/compare run: each repeat of a library is one launch, so
per library, collective and size the report lists every launch's time per call, and the
slowest over the fastest. A spread above 1.5x (the --limit) is flagged: that is a launch that ran
in another mode (another placement of the ranks on the cores, say), not noise within a launch.

    bench/launch_spread.py CSV [--max-bytes N] [--limit X]
"""
import argparse
import sys
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--max-bytes", type=int, default=None, help="only sizes up to this")
    ap.add_argument("--limit", type=float, default=1.5, help="flag spreads above this")
    a = ap.parse_args()
    # (library, collective, ranks, bytes) -> (repeat, µs per call) of each launch
    times = defaultdict(list)
    with open(a.csv) as f:
        for line in f:
            row = line.strip().split(",")
            if line.startswith("#") or row[0] in ("library", "memcpy") or len(row) < 7:
                continue
            size = int(row[3])
            if a.max_bytes is None or size <= a.max_bytes:
                times[(row[0], row[1], int(row[2]), size)].append((int(row[6]), float(row[4])))
    if not times:
        sys.exit(f"launch_spread: {a.csv}: no rows")
    print(f"{'library':16} {'collective':15} {'ranks':>5} {'bytes':>9}  {'slowest/fastest':>15}  "
          "time per call of each launch, by repeat (µs)")
    flagged = 0
    for (lib, coll, ranks, size), launches in sorted(times.items()):
        t = [us for _, us in sorted(launches)]
        spread = max(t) / min(t) if min(t) > 0 else float("inf")
        flag = " <" if spread > a.limit else ""
        flagged += bool(flag)
        print(f"{lib:16} {coll:15} {ranks:>5} {size:>9}  {spread:>14.2f}x  " +
              " ".join(f"{x:.1f}" for x in t) + flag)
    print(f"{flagged} of {len(times)} rows spread more than {a.limit}x (flagged <)")


if __name__ == "__main__":
    main()
