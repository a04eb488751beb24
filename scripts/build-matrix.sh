#!/usr/bin/env bash
# Builds what a user builds, the way a user builds it: every standard CMake build type with g++
# and with clang, without -Werror, and fails if any compiler prints a warning.
# Usage: scripts/build-matrix.sh [out-dir] [build types...]   (default: Release Debug)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/build-matrix}"
shift || true
types=("$@")
[ ${#types[@]} -gt 0 ] || types=(Release Debug)
status=0
for cxx in g++ clang++; do
  cc=gcc; [ "$cxx" = clang++ ] && cc=clang
  for type in "${types[@]}"; do
    dir="$out/$cxx-$type"
    log="$dir.log"
    mkdir -p "$dir"
    echo "== $cxx $type =="
    if ! { CC=$cc CXX=$cxx cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" &&
           ninja -C "$dir" -j "$(nproc)"; } >"$log" 2>&1; then
      tail -30 "$log"; echo "build-matrix: $cxx $type failed"; status=1; continue
    fi
    if grep -q "warning:" "$log"; then
      grep -B2 -A6 "warning:" "$log" | head -60
      echo "build-matrix: $cxx $type printed warnings"; status=1
    fi
  done
done
exit $status
