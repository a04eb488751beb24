#!/usr/bin/python3
"""The scale model's validation plot (bench/scale_model.py, docs/SCALE-MODEL.md): every measured
point against its prediction, log-log, with the +-25% lines, drawn by gnuplot."""

import os
import shutil
import subprocess
import sys
import tempfile


def plot(rows, png):
    """rows: scale_model.validate()'s; png: the file to write."""
    if shutil.which("gnuplot") is None:
        print("scale_model: gnuplot missing; no plot", file=sys.stderr)
        return
    groups = {}
    for r in rows:
        kind = {"cal": "fitted: alpha, o, beta", "tau": "fitted: tau",
                "shared": "shared-core band"}.get(r[7], "")
        groups.setdefault(f"{r[0]} {kind}".strip(), []).append((r[3], r[5]))
    with tempfile.TemporaryDirectory() as work:
        lines = []
        for i, (name, pts) in enumerate(sorted(groups.items())):
            dat = os.path.join(work, f"{i}.dat")
            with open(dat, "w") as fh:
                fh.writelines(f"{m} {p}\n" for m, p in pts)
            style = 6 if "fitted" in name else 4 if "shared-core" in name else 7
            lines.append(f"'{dat}' using 1:2 with points pt {style} ps 1.3 title '{name}'")
        lines += ["x with lines lc rgb 'black' title 'predicted = measured'",
                  "1.25*x with lines dt 2 lc rgb 'gray40' title '+25%'",
                  "0.75*x with lines dt 2 lc rgb 'gray40' title '-25%'"]
        script = ('set terminal pngcairo noenhanced size 900,760 font ",11"\n'
                  f"set output '{png}'\n"
                  'set title "StrataCL across hosts: scale model against bench/compare '
                  '(stratacl-heap, median of repeats)"\n'
                  'set xlabel "measured (us per call)"\nset ylabel "predicted (us per call)"\n'
                  "set logscale xy\nset grid\nset key top left\nset size square\n"
                  "set xrange [2:50000]\nset yrange [2:50000]\n"
                  f"plot {', '.join(lines)}\n")
        if subprocess.run(["gnuplot"], input=script, text=True).returncode != 0:
            print("scale_model: gnuplot failed", file=sys.stderr)
