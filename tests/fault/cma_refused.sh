#!/usr/bin/env bash
# cma_refused.sh STRATARUN FAULT_TESTS RANKS: runs the cma_refused case (one rank forbidden
# process_vm_readv by seccomp) and checks, besides its exit status, that every rank whose
# registered buffer had to be staged said so, once. (Where the kernel refuses every rank, no
# rank registers and none warns; the case itself checks that each registration failed clearly.)
set -uo pipefail
out=$(STRATACL_TIMEOUT_MS=20000 "$1" -n "$3" --timeout 120 "$2" cma_refused 2>&1)
status=$?
printf '%s\n' "$out"
[ "$status" = 0 ] || { echo "cma_refused.sh: the job failed ($status)"; exit 1; }
registered=$(printf '%s\n' "$out" | grep -c "^rank [0-9]*: registered$")
warned=$(printf '%s\n' "$out" | grep -c "cannot read its peers with process_vm_readv.*staged path")
[ "$warned" = "$registered" ] || {
  echo "cma_refused.sh: $warned fallback warnings for $registered registered ranks"; exit 1; }
echo "cma_refused.sh: OK ($registered ranks registered, each warned once)"
