#!/usr/bin/python3
"""The report of bench/serve-compare: medians over repeats of the serving engine's vLLM-style
results per communication path and request rate, the SLO analysis against `buffered`, the
communication shares, and gnuplot plots (P99 TTFT and output throughput against request rate,
the TTFT distribution at 80% of buffered's saturation).

    bench/serve_report.py DIR      (DIR holds PATH-rateR-repN.json)

SLO: 3 x buffered's P99 TTFT at the lightest rate. "Rate under SLO": where the median P99 TTFT
crosses it, interpolated in log(P99) between the swept rates on either side. Saturation: buffered's highest median request throughput; the
P99 TTFT at 80% of it is interpolated linearly between the swept rates.
"""
import collections
import glob
import json
import math
import os
import statistics
import subprocess
import sys

PATHS = ("stratacl", "buffered", "gloo")


def load(directory):
    runs = collections.defaultdict(list)
    for name in glob.glob(os.path.join(directory, "*-rate*-rep*.json")):
        with open(name) as f:
            r = json.load(f)
        runs[(r["path"], float(r["request_rate"]))].append(r)
    return runs


def med(runs, key, sub=None):
    values = [r[key] if sub is None else r[key].get(sub) for r in runs]
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def interpolate(points, x):
    """Linear interpolation of sorted (x, y) points at x (clamped to the ends)."""
    if x <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return points[-1][1]


def crossing(points, limit):
    """The rate at which P99 TTFT first exceeds `limit`, interpolated in log(P99) between the
    last swept rate under it and the next; the highest rate when it never does; 0 when the first
    already does."""
    if points[0][1] > limit:
        return 0.0
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if y1 > limit:
            return x0 + (x1 - x0) * (math.log(limit) - math.log(y0)) / (math.log(y1) - math.log(y0))
    return points[-1][0]


def gnuplot(script):
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        return True
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"serve_report: no plot ({e})", file=sys.stderr)
        return False


def main():
    directory = sys.argv[1]
    runs = load(directory)
    if not runs:
        sys.exit(f"serve_report: no results in {directory}")
    rates = sorted({rate for _, rate in runs})
    paths = [p for p in PATHS if any((p, r) in runs for r in rates)]
    any_run = next(iter(runs.values()))[0]
    repeats = max(len(v) for v in runs.values())
    print(f"Serving: {any_run['preset']} preset, {any_run['ranks']} ranks, {any_run['dtype']}, "
          f"prompts {any_run['random_input_len']} / outputs {any_run['random_output_len']} "
          f"tokens, median of {repeats} repeats; results in {directory}")
    print("\n%8s" % "rate" + "".join("  %9s %9s %9s" % (p[:9], "tok/s", "p99 ttft")
                                      for p in paths))
    print("%8s" % "req/s" + "".join("  %9s %9s %9s" % ("req/s", "", "ms") for _ in paths))
    table = {}
    for rate in rates:
        row = "%8g" % rate
        for p in paths:
            rs = runs.get((p, rate), [])
            table[(p, rate)] = (med(rs, "request_throughput"), med(rs, "output_throughput"),
                                med(rs, "p99_ttft_ms"))
            row += "  %9.2f %9.1f %9.1f" % table[(p, rate)]
        print(row)

    base = "buffered"
    if base not in paths:
        sys.exit("serve_report: the analysis is against buffered, and no buffered run is here")
    slo = table[(base, rates[0])][2] * 3
    print(f"\nSLO: P99 TTFT under {slo:.0f} ms (3 x buffered's at {rates[0]:g} req/s)")
    under = {p: crossing([(r, table[(p, r)][2]) for r in rates], slo) for p in paths}
    for p in paths:
        print(f"  {p:9s} highest rate under the SLO: {under[p]:.1f} req/s"
              + (f"  ({under[p] / under[base]:.2f}x buffered; the paper: 1.9x)"
                 if p != base and under[base] else ""))
    saturation = max(table[(base, r)][0] for r in rates)
    load80 = 0.8 * saturation
    if saturation < 0.9 * rates[-1]:
        print(f"Buffered saturates at {saturation:.2f} req/s; at 80% of it ({load80:.2f} req/s):")
    else:
        print(f"Buffered did not saturate within the sweep (served {saturation:.2f} req/s at "
              f"{rates[-1]:g}): sweep higher rates. At 80% of that ({load80:.2f} req/s):")
    p99_at = {p: interpolate([(r, table[(p, r)][2]) for r in rates], load80) for p in paths}
    for p in paths:
        print(f"  {p:9s} P99 TTFT {p99_at[p]:9.1f} ms"
              + (f"  (buffered / {p}: {p99_at[base] / p99_at[p]:.2f}x; the paper: 2.2x)"
                 if p != base else ""))

    print("\nSteps (median over every run): mean time and the share spent in communication "
          "(MoE exchange, packing, the step's state all_gather, waiting for peers)")
    for p in paths:
        rs = [r for rate in rates for r in runs.get((p, rate), [])]
        parts = []
        for phase in ("prefill", "decode"):
            parts.append(f"{phase} {med(rs, 'step_ms', phase):6.1f} ms, "
                         f"{100 * med(rs, 'comm_share', phase):4.1f}% comm")
        print(f"  {p:9s} " + "; ".join(parts))
    for phase in ("prefill", "decode"):
        shares = [r["comm_share"][phase] for rate in rates for r in runs.get((base, rate), [])
                  if phase in r["comm_share"]]
        if shares:
            sb = statistics.median(shares)
            print(f"  Amdahl, {phase}: were buffered's communication free, its step would be at "
                  f"most {1 / (1 - sb):.2f}x faster")

    # Plots.
    stem = os.path.join(directory, "serve")
    data = "\n".join(" ".join([f"{r:g}"] + [f"{table[(p, r)][2]:.2f} {table[(p, r)][1]:.2f}"
                                            for p in paths]) for r in rates)
    with open(stem + ".dat", "w") as f:
        f.write("# rate " + " ".join(f"{p}_p99_ttft_ms {p}_output_tok_s" for p in paths) + "\n")
        f.write(data + "\n")
    def lines(col0):  # one line per path, from column col0 of the first path on
        return ", ".join(f"'{stem}.dat' using 1:{col0 + 2 * i} with linespoints lw 2 title '{p}'"
                         for i, p in enumerate(paths))
    common = ("set terminal pngcairo size 900,560\nset grid\nset key top left\n"
              "set xlabel 'request rate (req/s)'\n")
    gnuplot(common + f"set output '{stem}-p99-ttft.png'\nset ylabel 'P99 TTFT (ms)'\n"
            f"set logscale y\nset title 'P99 time to first token'\n"
            f"set arrow from graph 0, first {slo} to graph 1, first {slo} nohead dt 2 lc rgb 'red'\n"
            f"plot {lines(2)}\n")
    gnuplot(common + f"set output '{stem}-throughput.png'\nset ylabel 'output tokens/s'\n"
            f"set title 'Output throughput'\nplot {lines(3)}\n")
    near = min(rates, key=lambda r: abs(r - load80))
    cdf = []
    for p in paths:
        ttfts = sorted(t * 1000 for r in runs.get((p, near), []) for t in r.get("ttfts", []))
        with open(f"{stem}-ttft-{p}.dat", "w") as f:
            f.write("\n".join(f"{t:.3f} {(i + 1) / len(ttfts):.4f}" for i, t in enumerate(ttfts)))
        cdf.append(f"'{stem}-ttft-{p}.dat' using 1:2 with lines lw 2 title '{p}'")
    gnuplot(f"set terminal pngcairo size 900,560\nset grid\nset output '{stem}-ttft-cdf.png'\n"
            f"set xlabel 'TTFT (ms)'\nset ylabel 'fraction of requests'\nset logscale x\n"
            f"set title 'TTFT distribution at {near:g} req/s (every repeat)'\n"
            f"plot {', '.join(cdf)}\n")
    print(f"\nPlots: {stem}-p99-ttft.png, {stem}-throughput.png, {stem}-ttft-cdf.png")


if __name__ == "__main__":
    main()
