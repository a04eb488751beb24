#!/usr/bin/env bash
# A rank SIGKILLs itself (mid-loop, or before init): every survivor must report it within the
# timeout, stratarun must exit non-zero naming it, and nothing may be left behind.
#   kill_rank.sh STRATARUN FAULT_TESTS VICTIM PHASE
set -u
stratarun=$1 fault_tests=$2 victim=${3:-2} phase=${4:-allreduce}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
timeout_ms=20000
[ "$phase" = init ] && timeout_ms=3000  # survivors can only give up at the bootstrap deadline
start=$(date +%s%N)
STRATACL_TIMEOUT_MS=$timeout_ms "$stratarun" -n 4 --grace 15 "$fault_tests" kill "$victim" "$phase" >"$out" 2>&1
rc=$?
took_ms=$(( ($(date +%s%N) - start) / 1000000 ))
cat "$out"
fail() { echo "kill_rank: FAILED: $*"; exit 1; }
[ "$rc" -eq 137 ] || fail "stratarun exited $rc, want 137 (the victim's SIGKILL)"
grep -q "stratarun: rank $victim (pid [0-9]*) was killed by signal KILL" "$out" || fail "no line naming rank $victim"
survivors=$(grep -c "SURVIVED" "$out")
[ "$survivors" -eq 3 ] || fail "$survivors of 3 survivors reported the failure"
grep -q "FAILED" "$out" && fail "a survivor saw the wrong error"
grep -q "terminating rank" "$out" && fail "stratarun had to terminate a survivor (it hung)"
# Nothing left behind: no rank still running, nothing of ours in /dev/shm.
sleep 0.2
pgrep -f "$fault_tests kill $victim $phase" >/dev/null && fail "a rank process is still running"
ls /dev/shm 2>/dev/null | grep -qi stratacl && fail "something was left in /dev/shm"
echo "kill_rank: $phase: 3 survivors detected the death of rank $victim; job took ${took_ms} ms"
