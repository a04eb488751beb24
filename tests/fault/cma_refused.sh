#!/usr/bin/env bash
# cma_refused.sh STRATARUN FAULT_TESTS RANKS: runs the cma_refused case (one rank forbidden
# process_vm_readv by seccomp) and checks, besides its exit status, that the ranks whose
# registered buffers had to be staged said so.
set -uo pipefail
out=$(STRATACL_TIMEOUT_MS=20000 "$1" -n "$3" --timeout 120 "$2" cma_refused 2>&1)
status=$?
printf '%s\n' "$out"
[ "$status" = 0 ] || { echo "cma_refused.sh: the job failed ($status)"; exit 1; }
warned=$(printf '%s\n' "$out" | grep -c "cannot read its peers with process_vm_readv.*staged path")
# Every rank but the refused one registered and so warned, once per communicator.
[ "$warned" = $(($3 - 1)) ] || { echo "cma_refused.sh: $warned fallback warnings, want $(($3 - 1))"; exit 1; }
echo "cma_refused.sh: OK"
