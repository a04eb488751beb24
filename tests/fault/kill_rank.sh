#!/usr/bin/env bash
# A rank SIGKILLs itself mid-loop: every survivor must report the dead rank within the timeout,
# and stratarun must exit non-zero naming it.
set -u
stratarun=$1 fault_tests=$2 victim=${3:-2}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s.%N)
STRATACL_TIMEOUT_MS=20000 "$stratarun" -n 4 --grace 15 "$fault_tests" kill "$victim" >"$out" 2>&1
rc=$?
took=$(echo "$(date +%s.%N) - $start" | bc)
cat "$out"
fail() { echo "kill_rank: FAILED: $*"; exit 1; }
[ "$rc" -eq 137 ] || fail "stratarun exited $rc, want 137 (the victim's SIGKILL)"
grep -q "stratarun: rank $victim (pid [0-9]*) was killed by signal KILL" "$out" || fail "no line naming rank $victim"
survivors=$(grep -c "SURVIVED" "$out")
[ "$survivors" -eq 3 ] || fail "$survivors of 3 survivors reported the failure"
grep -q "FAILED" "$out" && fail "a survivor saw the wrong error"
echo "kill_rank: 3 survivors detected the death of rank $victim; job took ${took}s"
