#!/usr/bin/env bash
# test_registered_cma.sh STRATARUN MP_TESTS RANKS: the collectives matrix (thin), with its
# registered-buffer placements. Where the kernel lets sibling processes read each other
# (tests/cma_allowed.py says so independently), they must really take the CMA path: with
# STRATACL_DEBUG=1 every rank logs once per communicator that peers read its registered buffers
# with process_vm_readv, and no rank may fall back to staging. Where the kernel refuses,
# registration must fail saying so, and the same calls run staged (and are checked).
set -uo pipefail
here=$(dirname "$0")
out=$(STRATACL_DEBUG=1 "$1" -n "$3" --timeout 600 "$2" collectives --thin 2>&1)
status=$?
printf '%s\n' "$out" | grep -v "^StrataCL\[.*info" | tail -n 20
[ "$status" = 0 ] || { echo "test_registered_cma.sh: the job failed ($status)"; exit 1; }
cma=$(printf '%s\n' "$out" | grep "info: rank [0-9]*: peers read registered buffers with process_vm_readv" |
      sed 's/.*info: rank \([0-9]*\):.*/\1/' | sort -u | wc -l)
staged=$(printf '%s\n' "$out" | grep -c "registered buffers run staged: .*process_vm_readv")
if python3 "$here/../cma_allowed.py"; then
  [ "$cma" = "$3" ] || { echo "test_registered_cma.sh: $cma of $3 ranks used CMA"; exit 1; }
  if [ "$staged" != 0 ] || printf '%s\n' "$out" | grep -q "take the staged path"; then
    echo "test_registered_cma.sh: a rank fell back to staging"; exit 1
  fi
  echo "test_registered_cma.sh: all $3 ranks published registered buffers for CMA reads"
else
  [ "$cma" = 0 ] || { echo "test_registered_cma.sh: CMA used although the kernel refuses it"; exit 1; }
  [ "$staged" = "$3" ] || { echo "test_registered_cma.sh: $staged of $3 ranks said why they staged"; exit 1; }
  echo "test_registered_cma.sh: the kernel refuses CMA here; every rank said so and ran staged"
fi
