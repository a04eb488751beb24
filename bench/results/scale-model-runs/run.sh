#!/bin/bash
# The scale model's same-day measurement set (docs/SCALE-MODEL.md): StrataCL alone, every layout
# the namespaces hold on this machine, and the single-host runs of 2 and 4 ranks for the local
# phases, one after another with nothing else running. Run from the repository root.
set -e
out=bench/results/scale-model-runs
common=(-b 8 -e 16M -f 8 -R 5 -L stratacl-heap --timeout 600 --no-setup)
bench/compare -n 2 "${common[@]}" -o $out/local-2.csv
bench/compare -n 4 "${common[@]}" -o $out/local-4.csv
for layout in 2x1 2x2 3x1 4x1 3x2 4x2; do
  h=${layout%x*} l=${layout#*x}
  bench/compare --hosts "$h" -n $((h * l)) "${common[@]}" -o "$out/hosts-$layout.csv"
done
