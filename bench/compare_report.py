#!/usr/bin/python3
"""The report of bench/compare: per collective and size, the median busbw over the repeats of
every library, the best other library and StrataCL(heap)'s ratios to it, to the best MPI, to
torch-gloo, to StrataCL's staged mode, to a --baseline build and to one thread; then the
memory-traffic model of the large sizes; then busbw against size per collective (gnuplot, PNG).

    bench/compare_report.py CSV --libraries L --collectives C [--only-present] [--no-plots]
                            [--failed TEXT]...

CSV is what bench/compare writes (rows library,collective,ranks,bytes,time_us,busbw_gbs,repeat,
comment lines first, the run's settings on the first). The report is printed and written to
<name>.txt beside the CSV, the plots to <name>-<collective>.png. bench/compare runs this after
measuring, and for --report with --only-present: libraries and collectives without a row are
left out. Each --failed names a run that failed; the report lists them at the end.

Memory-traffic model of the large sizes (>= 16 MiB) of StrataCL. Per rank, the bytes the
algorithm must read and write (S is the nccl-tests size of the row, n the rank count):
  allreduce (two-shot)  reduce-scatter reads its shard of all n inputs (N) and writes it (N/n),
                        allgather copies the n-1 other shards ((n-1)N/n read, as many
                        written):                   T = N + N/n + 2(n-1)N/n    (N = S)
  reduce_scatter        reads its shard of all n inputs, writes it:  T = S + S/n
  allgather             copies all n chunks into its output:         T = 2S
  alltoall              copies all n chunks into its output:         T = 2S
  broadcast             copies S from the root (the root from send to recv): T = 2S
memcpy moves 2 bytes of traffic (1 read, 1 written) per byte copied, so at the measured
single-thread memcpy bandwidth M (GB/s of bytes copied) and with every rank on its own core,
  model time = T / (2 M) * max(1, n / cores)
(ranks beyond the core count share cores). The report prints model time / measured time: 1.0
is memcpy speed. The model is optimistic for concurrent ranks, which share the memory bus: two
threads copy at less than twice the single-thread rate.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict

# Column names of the report.
SHORT = {"stratacl-heap": "heap", "stratacl-malloc": "staged", "stratacl-cma": "cma",
         "stratacl-1t": "1thread", "openmpi": "openmpi", "mpich": "mpich", "gloo": "gloo",
         "torch-gloo": "torch", "baseline-heap": "b-heap", "baseline-staged": "b-staged"}

# Fixed line styles, so that every plot reads the same way.
STYLE = {
    "stratacl-heap": "lw 3 pt 7 lc rgb '#c00000'",
    "stratacl-malloc": "lw 2 pt 5 lc rgb '#f08000'",
    "stratacl-cma": "lw 2 pt 4 lc rgb '#d0a000'",
    "baseline-heap": "lw 2 pt 7 dt 2 lc rgb '#600000'",
    "baseline-staged": "lw 1 pt 5 dt 2 lc rgb '#804000'",
    "openmpi": "lw 2 pt 9 lc rgb '#0050c0'",
    "mpich": "lw 2 pt 11 lc rgb '#00a000'",
    "gloo": "lw 2 pt 13 lc rgb '#8000a0'",
    "torch-gloo": "lw 2 pt 3 lc rgb '#606060'",
    "torch-stratacl": "lw 2 pt 6 lc rgb '#ff6060'",
    "torch-stratacl-heap": "lw 3 pt 6 lc rgb '#a00060'",
}

LARGE = 16 << 20  # the model's sizes start here
NOTES = re.compile(r"# (openmpi|mpich|gloo|torch-gloo|stratacl)")


def fail(message):
    print(f"compare: {message}", file=sys.stderr)
    sys.exit(2)


def header_field(header, key):
    """The value of the last ' key=value' of the CSV's first line, or ''."""
    found = re.findall(rf" {re.escape(key)}=([^ ]*)", header)
    return found[-1] if found else ""


def load(path):
    """The CSV's lines and its rows, each row the list of its fields (as text)."""
    with open(path) as f:
        lines = f.read().splitlines()
    rows = [line.split(",") for line in lines
            if line and not line.startswith("#") and line.split(",")[0] != "library"]
    return lines, rows


def field(row, i):
    return row[i] if i < len(row) else ""


def median(values):
    """Of numbers given as text: the middle one, as written, or the mean of the middle two."""
    v = sorted(values, key=float)
    k = len(v)
    return v[k // 2] if k % 2 else (float(v[k // 2 - 1]) + float(v[k // 2])) / 2


def as_text(x):
    """A median as the plots' data files hold it: the CSV's text, or a computed number written
    as integer when whole and with 6 significant digits otherwise."""
    if isinstance(x, str):
        return x
    return str(int(x)) if x == int(x) and abs(x) < 2**53 else "%.6g" % x


def bw(x):
    if x is None:
        return "-"
    return ("%.0f" if float(x) >= 100 else "%.3g") % float(x)


def ratio(a, b):
    if a is None or b is None or float(b) <= 0:
        return "-"
    return "%.2fx" % (float(a) / float(b))


def traffic(coll, s, n):
    if coll == "allreduce":
        return s + s / n + 2 * (n - 1) * s / n
    if coll == "reduce_scatter":
        return s + s / n
    return 2 * s


class Run:
    def __init__(self, rows, libraries, collectives):
        self.libs = libraries
        self.colls = collectives
        self.mem = []                   # memcpy GB/s, one per repeat
        self.bws = defaultdict(list)    # (library, collective, bytes) -> busbw texts
        self.times = defaultdict(list)  # the same -> time texts
        self.sizes = defaultdict(list)  # collective -> its sizes (as text), any library's
        for row in rows:
            lib, coll, size = field(row, 0), field(row, 1), field(row, 3)
            if lib == "memcpy":
                self.mem.append(field(row, 5))
                continue
            self.bws[lib, coll, size].append(field(row, 5))
            self.times[lib, coll, size].append(field(row, 4))
            if size not in self.sizes[coll]:
                self.sizes[coll].append(size)
        for coll in self.sizes:
            self.sizes[coll].sort(key=float)

    def busbw(self, lib, coll, size):
        values = self.bws.get((lib, coll, size))
        return median(values) if values else None

    def time(self, lib, coll, size):
        values = self.times.get((lib, coll, size))
        return float(median(values)) if values else None


def ratio_tables(run, out):
    out.append("Median busbw (GB/s) over the repeats. StrataCL: heap = --mode zerocopy, staged ="
               " --mode staged, cma = --mode cma.")
    out.append("Ratios of heap: x peer = / best other library, x MPI = / best of Open MPI and"
               " MPICH,")
    out.append("x torch = / torch-gloo, x staged = / staged, x base = / b-heap (heap of the"
               " --baseline build), x 1t = / 1thread.")
    for coll in run.colls:
        sizes = run.sizes.get(coll, [])
        if not sizes:
            continue
        out.append("")
        out.append(coll)
        out.append("%12s" % "bytes" + "".join(" %8s" % SHORT.get(l, "") for l in run.libs) +
                   " %9s %7s %7s %7s %8s %7s %7s" % ("best peer", "x peer", "x MPI", "x torch",
                                                     "x staged", "x base", "x 1t"))
        for size in sizes:
            line = "%12d" % int(size)
            best, best_bw, mpi = "", -1.0, -1.0
            heap = torch = staged = base = one = None
            for lib in run.libs:
                v = run.busbw(lib, coll, size)
                line += " %8s" % bw(v)
                if v is None:
                    continue
                if lib == "stratacl-heap":
                    heap = v
                elif lib == "stratacl-malloc":
                    staged = v
                elif lib == "baseline-heap":
                    base = v
                elif lib == "stratacl-1t":
                    one = v
                elif (lib != "stratacl-cma" and not lib.startswith("baseline-") and
                      float(v) > best_bw):
                    # Other libraries: the best peer (StrataCL's torch backend counts as one).
                    best_bw, best = float(v), SHORT.get(lib, "")
                if lib in ("openmpi", "mpich") and float(v) > mpi:
                    mpi = float(v)
                if lib == "torch-gloo":
                    torch = v
            line += " %9s %7s %7s %7s %8s %7s %7s" % (
                best or "-", ratio(heap, best_bw), ratio(heap, mpi), ratio(heap, torch),
                ratio(heap, staged), ratio(heap, base), ratio(heap, one))
            out.append(line)


def model_table(run, ranks, cores, out):
    if not run.mem:
        return
    memcpy = float(median(run.mem))
    out.append("")
    out.append("Memory-traffic model, sizes >= 16 MiB: model time = T / (2 x memcpy %.2f GB/s)"
               " x max(1, %d ranks / %d cores);" % (memcpy, ranks, cores))
    out.append("T per rank: allreduce N + N/n + 2(n-1)N/n, reduce_scatter S + S/n, others 2S."
               " Fraction = model / measured.")
    if not any(int(s) >= LARGE for c in run.colls for s in run.sizes.get(c, [])):
        out.append("(no size of 16 MiB or more in this run)")
        return
    out.append("")
    out.append("%-15s %12s %10s %10s %9s %10s %9s" % ("collective", "bytes", "model us",
                                                     "heap us", "heap", "staged us", "staged"))
    scale = ranks / cores if ranks > cores else 1
    for coll in run.colls:
        for size in run.sizes.get(coll, []):
            s = int(size)
            if s < LARGE:
                continue
            model = traffic(coll, s, ranks) / (2 * memcpy * 1e3) * scale
            cells = []
            for lib in ("stratacl-heap", "stratacl-malloc"):
                t = run.time(lib, coll, size)
                cells += ["-", "-"] if t is None else ["%.0f" % t, "%.0f%%" % (100 * model / t)]
            out.append("%-15s %12d %10.0f %10s %9s %10s %9s" % (coll, s, model, *cells))


def plots(run, base, ranks, cores, repeats):
    if shutil.which("gnuplot") is None:
        print("compare: gnuplot missing (scripts/setup-peers.sh installs gnuplot-nox); no plots",
              file=sys.stderr)
        return
    with tempfile.TemporaryDirectory() as work:
        for coll in run.colls:
            sizes = run.sizes.get(coll, [])
            if not sizes:
                continue
            # Columns: bytes, then the median busbw of each library ("NaN" where it has no row).
            dat = os.path.join(work, coll + ".dat")
            columns = {lib: [] for lib in run.libs}
            with open(dat, "w") as f:
                for size in sizes:
                    cells = [size]
                    for lib in run.libs:
                        v = run.busbw(lib, coll, size)
                        cells.append("NaN" if v is None else as_text(v))
                        columns[lib].append(v)
                    f.write(" ".join(cells) + "\n")
            png = f"{base}-{coll}.png"
            op = " sum" if coll in ("allreduce", "reduce_scatter") else ""
            lines, missing, style = [], [], ""
            for col, lib in enumerate(run.libs, start=2):
                # stratacl-1t has no style of its own: it keeps the one of the library before it,
                # as the plots have always drawn it.
                style = STYLE.get(lib, style)
                # A library with no row for this collective (a peer that lacks it) gets no line.
                if any(v is not None for v in columns[lib]):
                    lines.append(f"'{dat}' using 1:{col} with linespoints {style} title '{lib}'")
                else:
                    missing.append(lib)
            title = f"{coll}, float32{op}, {ranks} ranks on {cores} cores: busbw, median of " \
                    f"{repeats} repeats"
            if missing:
                title += f"\\n(no {coll} in: {', '.join(missing)})"
            script = (
                'set terminal pngcairo noenhanced size 1000,640 font ",11"\n'
                f"set output '{png}'\n"
                f'set title "{title}"\n'
                'set xlabel "size S (bytes, nccl-tests convention; ki = 1024)"\n'
                'set ylabel "busbw (GB/s)"\n'
                "set logscale x 2\n"
                "set logscale y 10\n"
                'set format x "%.0b%B"\n'
                'set format y "%g"\n'
                "set xtics 4\n"
                "set grid xtics ytics mytics\n"
                "set key top left\n"
                'set datafile missing "NaN"\n'
                f"plot {', '.join(lines)}\n")
            sys.stdout.flush()
            if subprocess.run(["gnuplot"], input=script, text=True).returncode != 0:
                print(f"compare: gnuplot failed for {coll}", file=sys.stderr)
            print(f"compare: plot {png}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--libraries", required=True, help="comma-separated, in column order")
    ap.add_argument("--collectives", required=True, help="comma-separated, in table order")
    ap.add_argument("--only-present", action="store_true",
                    help="leave out the libraries and collectives that have no row")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--failed", action="append", default=[], metavar="TEXT",
                    help="a run that failed, listed at the end")
    a = ap.parse_args()

    if not os.path.isfile(a.csv) or os.path.getsize(a.csv) == 0:
        fail(f"{a.csv}: no such CSV")
    lines, rows = load(a.csv)
    header = lines[0]
    ranks, cores = header_field(header, "ranks"), header_field(header, "cores")
    if not ranks or not cores:
        fail(f"{a.csv}: not a bench/compare CSV")
    repeats, elapsed_s = header_field(header, "repeats"), header_field(header, "elapsed_s")

    libraries = a.libraries.split(",")
    collectives = a.collectives.split(",")
    if a.only_present:
        libraries = [l for l in libraries if any(field(r, 0) == l for r in rows)]
        collectives = [c for c in collectives if any(field(r, 1) == c for r in rows)]
    run = Run(rows, libraries, collectives)

    out = [f"bench/compare: {ranks} ranks on {cores} cores, {repeats} repeats, run took "
           f"{elapsed_s} s; CSV {a.csv}"]
    out += ["  " + line[2:] for line in lines if NOTES.match(line)]
    ratio_tables(run, out)
    model_table(run, int(ranks), int(cores), out)
    if a.failed:
        out += ["", "FAILED runs (their rows are left out):"] + ["  " + f for f in a.failed]
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    sys.stdout.flush()
    base = a.csv[:-4] if a.csv.endswith(".csv") else a.csv
    with open(base + ".txt", "w") as f:
        f.write(text)

    if not a.no_plots:
        plots(run, base, ranks, cores, repeats)


if __name__ == "__main__":
    main()
