#!/usr/bin/env bash
# The whole test suite, in five parts:
#  0. formatting (clang-format), and the user's build: Release with g++ and with clang, without
#     -Werror, which must print no warning;
#  1. the regular build (warnings are errors): unit, multi-rank, fault, soak (60 s), example and
#     install tests;
#  2. AddressSanitizer + UBSan over the whole suite, with a 20 s soak (but the install check and
#     the address-space-limit test, which sanitizers cannot run: label nosan);
#  3. ThreadSanitizer over the same;
#  4. the bootstrap fuzzers (libFuzzer) for a bounded time.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"

echo "== formatting =="
"$root/scripts/check-format.sh"
echo "== user builds: Release, g++ and clang, no -Werror, no warnings =="
"$root/scripts/build-matrix.sh" "$root/build-matrix" Release

"$root/scripts/build.sh" "$root/build"
echo "== ctest: release build =="
ctest --test-dir "$root/build" --output-on-failure --timeout 900

"$root/scripts/build.sh" "$root/build-asan" -DSTRATACL_SANITIZE=ON -DSTRATACL_SOAK_SECONDS=20
echo "== ctest: AddressSanitizer + UBSan build =="
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS=suppressions="$root/tests/lsan.supp":print_suppressions=0 \
  ctest --test-dir "$root/build-asan" --output-on-failure --timeout 1800 -LE nosan

"$root/scripts/build.sh" "$root/build-tsan" -DSTRATACL_TSAN=ON -DSTRATACL_SOAK_SECONDS=20
echo "== ctest: ThreadSanitizer build =="
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir "$root/build-tsan" --output-on-failure --timeout 1800 -LE nosan

if [ -x "$root/tests/fuzz/run_fuzz.sh" ]; then
  echo "== fuzz: bootstrap parsers, 60 s =="
  "$root/tests/fuzz/run_fuzz.sh" 60
fi
