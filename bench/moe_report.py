#!/usr/bin/env python3
"""Report of bench/compare-moe: per configuration and call, the median time and DeepEP bandwidth
of every method over all passes of all rounds, and StrataCL's ratio to the best baseline (the
fastest of alltoallv-heap, alltoallv-staged, openmpi, mpich), marked against the 1.4x target.
"both" is dispatch + combine of the same pass. With --plot, a gnuplot bar chart of the ratios.

    python3 bench/moe_report.py FILE.csv [--plot FILE.png] [--markdown]

--markdown prints one table row per configuration and call instead (docs/PERFORMANCE.md).
"""
import argparse
import csv
import statistics
import subprocess
import sys
from collections import defaultdict

BASELINES = ["alltoallv-heap", "alltoallv-staged", "openmpi", "mpich"]
OURS = ["stratacl", "stratacl-staged"]
TARGET = 1.4
CONFIG_KEYS = ["layout", "ranks", "tokens", "hidden", "topk", "experts", "routing", "x", "recv",
               "out"]


def load(path):
    # times[config][method][call] -> list of (time_us, bytes per rank)
    times = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    with open(path) as f:
        for row in csv.DictReader(f):
            config = tuple(row[k] for k in CONFIG_KEYS)
            t = float(row["time_us"])
            gbs = float(row["gbs"])
            times[config][row["method"]][row["call"]].append((t, gbs * t * 1e3))
    return times


def config_name(config):
    c = dict(zip(CONFIG_KEYS, config))
    mode = "normal" if c["layout"] == "token" else "low-latency"
    rows = c["x"] if c["x"] == c["recv"] else f'{c["x"]}->{c["recv"]}'
    return (f'{mode} ({c["layout"]}-major) {c["ranks"]} ranks T={c["tokens"]} H={c["hidden"]} '
            f'top-{c["topk"]}/{c["experts"]} {c["routing"]} {rows}')


def summarise(methods):
    """method -> call -> (median us, bytes); 'both' pairs dispatch and combine pass by pass."""
    out = {}
    for m, calls in methods.items():
        out[m] = {}
        for call in ("dispatch", "combine"):
            v = calls.get(call, [])
            if v:
                out[m][call] = (statistics.median(t for t, _ in v), v[0][1])
        d, c = calls.get("dispatch", []), calls.get("combine", [])
        if d and len(d) == len(c):
            out[m]["both"] = (statistics.median(a[0] + b[0] for a, b in zip(d, c)),
                              d[0][1] + c[0][1])
    return out


def markdown(times):
    methods = OURS + BASELINES
    print("| config | call | " + " | ".join(methods) + " | x best baseline |")
    print("|---|---|" + "---:|" * (len(methods) + 1))
    for config in sorted(times):
        s = summarise(times[config])
        c = dict(zip(CONFIG_KEYS, config))
        name = (f'{"LL" if c["layout"] == "expert" else "normal"} {c["ranks"]}r T={c["tokens"]} '
                f'{c["routing"]} {c["x"]}')
        for call in ("dispatch", "combine"):
            cells = [f"{s[m][call][0]:.0f}" if m in s and call in s[m] else "-" for m in methods]
            best = min(s[m][call][0] for m in BASELINES if m in s and call in s[m])
            r = best / s["stratacl"][call][0]
            mark = "" if r >= TARGET else " (below 1.4)"
            print(f"| {name} | {call} | " + " | ".join(cells) + f" | **{r:.2f}x**{mark} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--plot")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    times = load(args.csv)
    if args.markdown:
        return markdown(times)
    bars = []  # (label, dispatch ratio, combine ratio)
    misses = 0
    for config in sorted(times):
        s = summarise(times[config])
        print(f"\n## {config_name(config)}")
        print(f'{"call":9} {"method":17} {"median us":>11} {"GB/s":>8} {"x best baseline":>16}')
        ratios = {}
        for call in ("dispatch", "combine", "both"):
            base = [(s[m][call][0], m) for m in BASELINES if m in s and call in s[m]]
            best_t, best_m = min(base) if base else (None, None)
            for m in OURS + BASELINES:
                if m not in s or call not in s[m]:
                    continue
                t, b = s[m][call]
                mark = ""
                if m in OURS and best_t:
                    r = best_t / t
                    mark = f"{r:5.2f}x"
                    if m == "stratacl":  # the target is the zero-copy path's
                        ok = r >= TARGET if call != "both" else r > 1.0
                        mark += " ok" if ok else " MISS"
                        ratios[call] = r
                        misses += 0 if ok else 1
                elif m == best_m:
                    mark = "(best baseline)"
                print(f"{call:9} {m:17} {t:11.1f} {b / t * 1e-3:8.2f} {mark:>16}")
        c = dict(zip(CONFIG_KEYS, config))
        label = (f'{"N" if c["layout"] == "token" else "LL"} {c["ranks"]}r '
                 f'{c["routing"].replace("zipf:", "z")} {c["x"]}')
        bars.append((label, ratios.get("dispatch", 0), ratios.get("combine", 0)))
    print(f"\ntarget (stratacl, zero-copy): dispatch and combine each >= {TARGET}x the best "
          f"baseline, dispatch + combine faster than the best baseline's. Misses: {misses}")
    if args.plot and bars:
        data = "\n".join(f'"{l}" {d:.3f} {c:.3f}' for l, d, c in bars)
        script = f"""
set terminal pngcairo size 1200,520
set output '{args.plot}'
set title 'StrataCL MoE: time of the best baseline / time of StrataCL (zero-copy)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel 'x best baseline'
set xtics rotate by -35
set grid ytics
set yrange [0:*]
set arrow from graph 0, first {TARGET} to graph 1, first {TARGET} nohead dt 2 lw 2 lc rgb 'red'
plot '-' using 2:xtic(1) title 'dispatch', '' using 3 title 'combine'
{data}
e
{data}
e
"""
        try:
            subprocess.run(["gnuplot"], input=script, text=True, check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"moe_report: no plot ({e})", file=sys.stderr)


if __name__ == "__main__":
    main()
