#!/usr/bin/env bash
# Two ranks of RANKS (default 4) SIGKILL themselves (one mid-loop, one while it shrinks): the
# survivors must shrink, finish the loop with every element right, and stratarun must report the
# deaths.
#   shrink.sh STRATARUN FAULT_TESTS VICTIM SECOND [NETNS_SCRIPT K [RANKS]]   (NETNS_SCRIPT: 2 hosts)
set -u
stratarun=$1 fault_tests=$2 victim=$3 second=$4 netns=${5:-} k=${6:-} ranks=${7:-4}
out=$(mktemp) dir=$(mktemp -d)
trap 'rm -rf "$out" "$dir"' EXIT
launch=("$stratarun" -n "$ranks" --grace 60 --timeout 300)
if [ -n "$netns" ]; then
  [ "$(id -u)" -eq 0 ] || { echo "shrink: needs root to create network namespaces"; exit 1; }
  trap '"$netns" down "$k"; rm -rf "$out" "$dir"' EXIT
  "$netns" up "$k" 2 || exit 1
  launch+=(--netns "scl${k}h0,scl${k}h1" --root-addr "10.213.${k}.254")
fi
STRATACL_TIMEOUT_MS=20000 "${launch[@]}" "$fault_tests" shrink "$victim" "$second" "$dir" >"$out" 2>&1
rc=$?
cat "$out"
fail() { echo "shrink: FAILED: $*"; exit 1; }
[ "$rc" -eq 137 ] || fail "stratarun exited $rc, want 137 (the victims' SIGKILL)"
grep -q "FAILED" "$out" && fail "a survivor saw something wrong"
survivors=$(grep -c "SHRUNK" "$out")
[ "$survivors" -eq $((ranks - 2)) ] || fail "$survivors of $((ranks - 2)) survivors finished the loop"
grep -q "terminating rank" "$out" && fail "stratarun had to terminate a survivor (it hung)"
echo "shrink: all $survivors survivors finished after the deaths of ranks $victim and $second"
