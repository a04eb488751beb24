#!/usr/bin/env bash
# Zero-copy (heap) against staged (malloc) allreduce, interleaved in one invocation:
#   bench/heap_vs_malloc.sh [ranks] [repeats] [max size]
# Runs scl-bench heap, malloc, heap, malloc, ... and prints a markdown table of the median
# out-of-place time per size, busbw, and the heap/malloc speed-up. Every run checks every value.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build/tools"
ranks=${1:-2} repeats=${2:-3} max=${3:-256M}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq 1 "$repeats"); do
  for mem in heap malloc; do
    "$bin/stratarun" -n "$ranks" "$bin/scl-bench" allreduce -b 8 -e "$max" -f 2 -c 1 -n 10 -w 3 \
      --mem "$mem" >"$tmp/$mem.$r" || { cat "$tmp/$mem.$r"; exit 1; }
  done
done
# Columns of a data row: size count type redop root time algbw busbw #wrong ...
awk -v R="$repeats" -v N="$ranks" '
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  FNR == 1 { mem = (FILENAME ~ /heap/) ? "heap" : "malloc" }
  /^ *[0-9]/ { t[mem, $1] = t[mem, $1] " " $6; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
  END {
    printf "| size (B) | heap time (us) | heap busbw (GB/s) | malloc time (us) | malloc busbw (GB/s) | heap speed-up |\n"
    printf "|---:|---:|---:|---:|---:|---:|\n"
    for (i = 1; i <= k; i++) {
      s = order[i]; h = median(t["heap", s]); m = median(t["malloc", s])
      f = 2 * (N - 1) / N
      printf "| %d | %.1f | %.2f | %.1f | %.2f | %.2fx |\n", s, h, s / h / 1e3 * f, m, s / m / 1e3 * f, m / h
    }
  }' "$tmp"/heap.* "$tmp"/malloc.*
