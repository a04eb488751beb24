#!/usr/bin/env bash
# test_registered_cma.sh STRATARUN MP_TESTS RANKS: the collectives matrix (thin), whose
# registered-buffer placements must really take the CMA path: with STRATACL_DEBUG=1 every rank
# logs once per communicator that peers read its registered buffers with process_vm_readv, and
# no rank may log a fallback to staging.
set -uo pipefail
out=$(STRATACL_DEBUG=1 "$1" -n "$3" --timeout 600 "$2" collectives --thin 2>&1)
status=$?
printf '%s\n' "$out" | grep -v "^StrataCL\[.*info" | tail -n 20
[ "$status" = 0 ] || { echo "test_registered_cma.sh: the job failed ($status)"; exit 1; }
cma=$(printf '%s\n' "$out" | grep "info: rank [0-9]*: peers read registered buffers with process_vm_readv" |
      sed 's/.*info: rank \([0-9]*\):.*/\1/' | sort -u | wc -l)
[ "$cma" = "$3" ] || { echo "test_registered_cma.sh: $cma of $3 ranks used CMA"; exit 1; }
if printf '%s\n' "$out" | grep -q "take the staged path"; then
  echo "test_registered_cma.sh: a rank fell back to staging"; exit 1
fi
echo "test_registered_cma.sh: all $3 ranks published registered buffers for CMA reads"
