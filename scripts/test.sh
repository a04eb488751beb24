#!/usr/bin/env bash
# The whole test suite, in five parts:
#  0. formatting (clang-format), and the user's build: Release with g++ and with clang, without
#     -Werror, which must print no warning;
#  1. the suite on the user's g++ Release build: unit, multi-rank, across-hosts, fault, Python
#     and PyTorch, soak (60 s: on one host and across hosts), example and install tests;
#  2. AddressSanitizer + UBSan over the suite, with 20 s of soak (and `large` with workers and
#     engines at its smaller size only: tests/mp/CMakeLists.txt), but for the install check and the
#     address-space-limit test, which sanitizers cannot run (label nosan), and the entries that
#     repeat a lighter sibling's code paths at more ranks, hosts or worker configurations (label
#     heavy: minutes each under a sanitizer);
#  3. ThreadSanitizer over the same, less the data cases at the default team size (label
#     default_team: one thread per rank here), which the worker matrix runs threaded, and the
#     entries whose threads run a lighter sibling's code (label notsan);
#  4. the bootstrap fuzzers (libFuzzer) for a bounded time.
# Each part prints when it starts; the whole takes about 57 minutes on 2 cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"

phase() {
  echo "== $1 == (after ${SECONDS}s)"
}

phase "formatting"
"$root/scripts/check-format.sh"
phase "user builds: Release, g++ and clang, no -Werror, no warnings"
"$root/scripts/build-matrix.sh" "$root/build-matrix" Release

phase "ctest: the user's g++ Release build"
ctest --test-dir "$root/build-matrix/g++-Release" --output-on-failure --timeout 900

# Sanitizer reports need function names and line numbers, not local variables: -g1 gives them and
# compiles about 30% faster than -g (the two sanitizer builds take about 9 of its minutes).
sanitizer_flags="-O2 -g1 -DNDEBUG"
sanitizer_build() {
  "$root/scripts/build.sh" "$@" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$sanitizer_flags" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="$sanitizer_flags"
}

sanitizer_build "$root/build-asan" -DSTRATACL_SANITIZE=ON -DSTRATACL_SOAK_SECONDS=20
phase "ctest: AddressSanitizer + UBSan build"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS=suppressions="$root/tests/lsan.supp":print_suppressions=0 \
  ctest --test-dir "$root/build-asan" --output-on-failure --timeout 1800 -LE "nosan|heavy"

sanitizer_build "$root/build-tsan" -DSTRATACL_TSAN=ON -DSTRATACL_SOAK_SECONDS=20
phase "ctest: ThreadSanitizer build"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir "$root/build-tsan" --output-on-failure --timeout 1800 -LE "nosan|heavy|default_team|notsan"

if [ -x "$root/tests/fuzz/run_fuzz.sh" ]; then
  phase "fuzz: bootstrap parsers, 60 s"
  "$root/tests/fuzz/run_fuzz.sh" 60
fi
phase "done"
