#!/usr/bin/env bash
# The whole test suite: the regular build, then an AddressSanitizer + UBSan build, each run
# through ctest (unit, multi-rank and fault tests).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"

"$root/scripts/build.sh" "$root/build"
echo "== ctest: release build =="
ctest --test-dir "$root/build" --output-on-failure --timeout 900

"$root/scripts/build.sh" "$root/build-asan" -DSTRATACL_SANITIZE=ON
echo "== ctest: AddressSanitizer + UBSan build =="
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$root/build-asan" --output-on-failure --timeout 1800 -LE nosan
