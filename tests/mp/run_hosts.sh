#!/usr/bin/env bash
# Runs an mp_tests case across H "hosts" (network namespaces on a bridge, made and removed here).
#   run_hosts.sh STRATARUN NETNS_SCRIPT K H N [--first NS,...] PROGRAM [ARGS...]
# --first: namespaces put before the H in stratarun's list, which gives each an equal share of the
# N ranks in order: "--first scl5h0" with H = 2 and N = 3 puts ranks 0 and 1 on host 0, rank 2 on
# host 1 (an uneven layout).
set -u
stratarun=$1 netns=$2 k=$3 hosts=$4 n=$5
shift 5
list=$(seq -s, -f "scl${k}h%g" 0 $((hosts - 1)))
if [ "${1:-}" = --first ]; then
  list=$2,$list
  shift 2
fi
[ "$(id -u)" -eq 0 ] || { echo "run_hosts: needs root to create network namespaces"; exit 1; }
trap '"$netns" down "$k"' EXIT
"$netns" up "$k" "$hosts" || exit 1
"$stratarun" -n "$n" --timeout 600 --netns "$list" --root-addr "10.213.${k}.254" "$@"
