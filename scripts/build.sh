#!/usr/bin/env bash
# Configures and builds one tree. Usage: scripts/build.sh [build-dir] [extra cmake args...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/build}"
shift || true
# Developers' and CI's builds: warnings are errors (a user's plain CMake build does not do that).
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATACL_WERROR=ON "$@" \
  >/dev/null
# Two cores here: more jobs only thrash.
ninja -C "$dir" -j "$(nproc)"
