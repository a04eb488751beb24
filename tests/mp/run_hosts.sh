#!/usr/bin/env bash
# Runs an mp_tests case across H "hosts" (network namespaces on a bridge, made and removed here).
#   run_hosts.sh STRATARUN NETNS_SCRIPT K H N PROGRAM [ARGS...]
set -u
stratarun=$1 netns=$2 k=$3 hosts=$4 n=$5
shift 5
[ "$(id -u)" -eq 0 ] || { echo "run_hosts: needs root to create network namespaces"; exit 1; }
trap '"$netns" down "$k"' EXIT
"$netns" up "$k" "$hosts" || exit 1
list=$(seq -s, -f "scl${k}h%g" 0 $((hosts - 1)))
"$stratarun" -n "$n" --timeout 600 --netns "$list" --root-addr "10.213.${k}.254" "$@"
