#!/usr/bin/env bash
# Runs a command with H "hosts" (network namespaces on a bridge) made for it and removed after.
#   run_hosts.sh NETNS_SCRIPT K H COMMAND [ARGS...]
set -u
netns=$1 k=$2 hosts=$3
shift 3
[ "$(id -u)" -eq 0 ] || { echo "run_hosts: needs root to create network namespaces"; exit 1; }
trap '"$netns" down "$k"' EXIT
"$netns" up "$k" "$hosts" || exit 1
"$@"
