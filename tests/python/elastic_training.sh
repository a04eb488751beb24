#!/usr/bin/env bash
# elastic_training.py on 4 ranks: rank 2 SIGKILLs itself mid-run; the 3 survivors must shrink,
# finish the run with the single-process result, and stratarun must report the death.
#   elastic_training.sh STRATARUN BUILD_PYTHON_DIR
set -u
here=$(dirname "$0")
out=$(mktemp)
trap 'rm -f "$out"' EXIT
STRATARUN_ARGS="--grace 60" bash "$here/run.sh" "$1" "$2" 4 "$here/elastic_training.py" >"$out" 2>&1
rc=$?
cat "$out"
fail() { echo "elastic_training: FAILED: $*"; exit 1; }
[ "$rc" -eq 137 ] || fail "stratarun exited $rc, want 137 (the victim's SIGKILL)"
survivors=$(grep -o "rank [0-9]*: ELASTIC" "$out" | sort -u | wc -l)
[ "$survivors" -eq 3 ] || fail "$survivors of 3 survivors finished with the right weights"
grep -q "terminating rank" "$out" && fail "stratarun had to terminate a survivor (it hung)"
echo "elastic_training: the 3 survivors shrank and finished with the single-process weights"
