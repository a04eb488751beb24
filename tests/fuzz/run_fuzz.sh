#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (in build-fuzz) and fuzzes each for an equal share of
# SECONDS, starting from a temporary copy of its committed corpus: new inputs never land in the
# tree. Exits non-zero on any crash, leak, timeout or out-of-memory, printing the input in hex.
#
# Usage: tests/fuzz/run_fuzz.sh SECONDS
# Environment: STRATACL_FUZZ_BUILD (build dir, default build-fuzz), STRATACL_FUZZ_TARGETS (default
# "wire unique_id root"), JOBS (build parallelism, default nproc), STRATACL_FUZZ_KEEP=1 (keep the
# temporary dir, with the grown corpora, even when all targets pass).
# Needs clang and libFuzzer's runtime (Debian 12: clang libclang-rt-14-dev).
set -euo pipefail

usage="usage: $0 SECONDS"
secs="${1:?$usage}"
if ! [[ "$secs" =~ ^[0-9]+$ ]] || ((secs < 1)); then
  echo "$usage" >&2
  exit 2
fi
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${STRATACL_FUZZ_BUILD:-$root/build-fuzz}"
read -r -a targets <<<"${STRATACL_FUZZ_TARGETS:-wire unique_id root}"
per=$((secs / ${#targets[@]}))
((per >= 1)) || per=1

# CC/CXX only count when a build dir is first configured: refuse to fuzz with a gcc cache.
cache="$build/CMakeCache.txt"
if [ -f "$cache" ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang' "$cache"; then
  echo "run_fuzz: $build was configured with another compiler; remove it first" >&2
  exit 2
fi
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSTRATACL_FUZZ=ON -DSTRATACL_BUILD_TESTS=ON >/dev/null
# Only the fuzz binaries: each compiles just the few sources it needs.
ninja -C "$build" -j "${JOBS:-$(nproc)}" "${targets[@]/#/fuzz_}"

# UBSan's report should carry a stack, like ASan's.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"

work="$(mktemp -d "${TMPDIR:-/tmp}/stratacl-fuzz.XXXXXX")"
failed=0
for t in "${targets[@]}"; do
  dir="$work/$t"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp -R "$root/tests/fuzz/corpus/$t/." "$dir/corpus/"
  echo "run_fuzz: fuzz_$t for ${per}s ($(find "$dir/corpus" -type f | wc -l) seeds)"
  rc=0
  "$build/tests/fuzz/fuzz_$t" -max_total_time="$per" -rss_limit_mb=2048 -timeout=30 \
    -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "$dir/corpus" >"$dir/log" 2>&1 || rc=$?

  # A run that dies while loading its seeds prints no stats: every lookup may come back empty.
  final_stat() { sed -n "s/^stat::$1: *//p" "$dir/log"; }
  last_status() { grep -E '^#[0-9]+.*cov: ' "$dir/log" | tail -n 1; }
  status_field() { last_status | grep -oE "$1: [^ ]+" | cut -d' ' -f2; }
  execs="$(final_stat number_of_executed_units || true)"
  rate="$(final_stat average_exec_per_sec || true)"
  cov="$(status_field cov || true)"
  ft="$(status_field ft || true)"
  corp="$(status_field corp || true)"
  echo "run_fuzz: fuzz_$t: execs=${execs:-?} exec/s=${rate:-?} cov=${cov:-?} ft=${ft:-?}" \
    "corpus=${corp:-?} exit=$rc"

  artifacts=("$dir"/artifacts/*)
  if [ "$rc" -ne 0 ] || [ -e "${artifacts[0]}" ]; then
    failed=1
    echo "run_fuzz: fuzz_$t FAILED; its report:" >&2
    # From the first report line, so the faulting stack comes before allocation histories.
    report="$(awk '/fuzz property violated|==ERROR|runtime error|ERROR: libFuzzer/ {p = 1} p' \
      "$dir/log" | head -n 100)"
    if [ -n "$report" ]; then echo "$report" >&2; else tail -n 60 "$dir/log" >&2; fi
    for a in "${artifacts[@]}"; do
      [ -e "$a" ] || continue
      echo "run_fuzz: input $a ($(stat -c %s "$a") bytes), hex:" >&2
      od -An -v -tx1 "$a" | tr -d ' \n' >&2
      echo >&2
      echo "run_fuzz: reproduce with: $build/tests/fuzz/fuzz_$t $a" >&2
      echo "run_fuzz:   or, in any build: fuzz_replay $t=$a" >&2
    done
  fi
done

if [ "$failed" -ne 0 ]; then
  echo "run_fuzz: FAILED; logs and inputs kept in $work" >&2
  exit 1
fi
if [ "${STRATACL_FUZZ_KEEP:-0}" = 1 ]; then
  echo "run_fuzz: logs and grown corpora kept in $work"
else
  rm -rf "$work"
fi
echo "run_fuzz: all targets passed"
