#!/usr/bin/env bash
# exit_on_exception.py on 2 ranks: rank 0 raises with a call in flight; stratarun must exit 1
# naming it, and rank 1 must see it leave and its next call fail naming it.
#   exit_on_exception.sh STRATARUN BUILD_PYTHON_DIR
set -u
here=$(dirname "$0")
out=$(mktemp)
trap 'rm -f "$out"' EXIT
STRATARUN_ARGS="--grace 30" bash "$here/run.sh" "$1" "$2" 2 "$here/exit_on_exception.py" >"$out" 2>&1
rc=$?
cat "$out"
fail() { echo "exit_on_exception: FAILED: $*"; exit 1; }
[ "$rc" -eq 1 ] || fail "stratarun exited $rc, want 1 (rank 0's exception)"
grep -q "stratarun: rank 0 (pid [0-9]*) exited with status 1" "$out" || fail "no line naming rank 0"
grep -q "rank 0 fails with a call in flight" "$out" || fail "rank 0's traceback is missing"
grep -q "SURVIVED rank 1" "$out" || fail "rank 1 did not report rank 0's exit and its next call's error"
grep -q "terminating rank" "$out" && fail "stratarun had to terminate rank 1 (it hung)"
grep -q "terminate called" "$out" && fail "a rank aborted"
echo "exit_on_exception: rank 0 left at once, rank 1's next call named it"
