#!/usr/bin/env bash
# fault_kill.py on 3 ranks: rank 2 SIGKILLs itself; stratarun must exit 137 naming it, and both
# survivors must report an error naming rank 2 within the timeout, then leave.
#   fault_kill.sh STRATARUN BUILD_PYTHON_DIR
set -u
here=$(dirname "$0")
out=$(mktemp)
trap 'rm -f "$out"' EXIT
STRATARUN_ARGS="--grace 30" bash "$here/run.sh" "$1" "$2" 3 "$here/fault_kill.py" >"$out" 2>&1
rc=$?
cat "$out"
fail() { echo "fault_kill: FAILED: $*"; exit 1; }
[ "$rc" -eq 137 ] || fail "stratarun exited $rc, want 137 (the victim's SIGKILL)"
grep -q "stratarun: rank 2 (pid [0-9]*) was killed by signal KILL" "$out" || fail "no line naming rank 2"
# Counted by rank, not by line: two ranks' lines can arrive joined on one line.
survivors=$(grep -o "SURVIVED rank [0-9]*" "$out" | sort -u | wc -l)
[ "$survivors" -eq 2 ] || fail "$survivors of 2 survivors reported the death in time"
grep -q "FAILED rank" "$out" && fail "a survivor saw the wrong error"
grep -q "terminating rank" "$out" && fail "stratarun had to terminate a survivor (it hung)"
echo "fault_kill: both survivors raised, naming rank 2"
