#!/usr/bin/env python3
"""The report of bench/scaling: per collective, rank count and size, the median algbw (GB/s:
bytes / time, which unlike busbw means something at one rank too) of
every StrataCL configuration (stratacl-tTeE: T threads per rank, 0 = auto, E copy engines) and of
the MPIs, the best configuration, and its ratio to one thread (t1e0) and to the best MPI. With
--plot, algbw against threads at the largest size, one line per rank count and engine count,
the best MPI as a dashed line per rank count (gnuplot, PNG). With --markdown, the table in
Markdown for docs/PERFORMANCE.md."""
import argparse
import csv
import re
import statistics
import subprocess
from collections import defaultdict


def load(path):
    runs = defaultdict(list)
    for row in csv.DictReader(open(path)):
        key = (row["library"], row["collective"], int(row["ranks"]), int(row["bytes"]))
        runs[key].append(int(row["bytes"]) / float(row["time_us"]) / 1e3)
    return {k: statistics.median(v) for k, v in runs.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--cores", type=int, default=0)
    ap.add_argument("--plot")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    bw = load(a.csv)
    libs = sorted({k[0] for k in bw if k[0].startswith("stratacl-")},
                  key=lambda l: tuple(int(x) for x in re.findall(r"\d+", l)))
    cases = sorted({k[1:] for k in bw})
    sep = " | " if a.markdown else " "
    head = ["coll", "ranks", "bytes"] + [l.replace("stratacl-", "") for l in libs] + [
        "openmpi", "mpich", "best", "x 1t", "x MPI"]
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    else:
        if a.cores:
            print(f"algbw GB/s (bytes / time), medians; {a.cores} cores")
        print(" ".join(f"{h:>9}" for h in head))
    for coll, n, size in cases:
        vals = [bw.get((l, coll, n, size)) for l in libs]
        mpis = [bw.get((m, coll, n, size)) for m in ("openmpi", "mpich")]
        mine = [(v, l) for v, l in zip(vals, libs) if v is not None]
        best = max(mine) if mine else (None, "-")
        one = bw.get(("stratacl-t1e0", coll, n, size))
        mpi = max([m for m in mpis if m is not None], default=None)
        ratio = lambda x, y: f"{x / y:.2f}x" if x and y else "-"
        cells = [coll, str(n), str(size)] + [f"{v:.1f}" if v is not None else "-" for v in vals + mpis]
        cells += [best[1].replace("stratacl-", ""), ratio(best[0], one), ratio(best[0], mpi)]
        print(("| " + " | ".join(cells) + " |") if a.markdown else
              " ".join(f"{c:>9}" for c in cells))
    if a.plot:
        plot(bw, libs, a.plot)


def plot(bw, libs, path):
    colls = sorted({k[1] for k in bw})
    blocks, titles = [], []
    for coll in colls:
        largest = max(k[3] for k in bw if k[1] == coll)
        for n in sorted({k[2] for k in bw if k[1] == coll}):
            for e in sorted({int(re.search(r"e(\d+)", l).group(1)) for l in libs}):
                pts = []
                for l in libs:
                    t, le = (int(x) for x in re.findall(r"\d+", l))
                    v = bw.get((l, coll, n, largest))
                    if le == e and t > 0 and v is not None:
                        pts.append((t, v))
                if pts:
                    blocks.append("\n".join(f"{t} {v}" for t, v in sorted(pts)))
                    titles.append(f"{coll} {n} ranks, {e} engines")
            mpi = max([bw.get((m, coll, n, largest)) or 0 for m in ("openmpi", "mpich")])
            if mpi:
                blocks.append(f"1 {mpi}\n64 {mpi}")
                titles.append(f"{coll} {n} ranks, best MPI")
    script = [f"set terminal pngcairo size 1100,700; set output '{path}'",
              "set logscale x 2; set xlabel 'threads per rank'; set ylabel 'algbw GB/s (largest size)'",
              "set key outside right; set grid"]
    script.append("plot " + ", ".join(
        f"'-' with linespoints title '{t}'" + (" dt 2" if "MPI" in t else "") for t in titles))
    for b in blocks:
        script.append(b + "\ne")
    subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=True)


if __name__ == "__main__":
    main()
