#!/usr/bin/env bash
# Makes "hosts" on this machine: network namespaces joined by veth links to one bridge, the way
# the multi-host tests and benchmarks run StrataCL across hosts without a cluster.
#
#   scripts/netns-hosts.sh up K H     namespaces scl<K>h0 .. scl<K>h<H-1>, bridge scl<K>br
#                                     (10.213.<K>.254), host h at 10.213.<K>.<h+1>
#   scripts/netns-hosts.sh down K     removes them (idempotent)
#
# K (1-250) keeps concurrent jobs apart. Only addresses inside 10.213.<K>.0/24, on links this
# script creates, are used. Needs root (CAP_NET_ADMIN).
set -euo pipefail

cmd=${1:?usage: netns-hosts.sh up K H | down K}
k=${2:?K (1-250) is required}
[[ $k =~ ^[0-9]+$ ]] && ((k >= 1 && k <= 250)) || { echo "netns-hosts: K must be 1-250" >&2; exit 2; }
br=scl${k}br

down() {
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^scl${k}h[0-9]+$" || true); do
    # A job that outlived its launcher (ranks a timeout left behind) would go on using the cores.
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns delete "$ns" 2>/dev/null || true
  done
  # A deleted namespace lives on until its last socket is gone: remove our veth ends ourselves.
  for v in $(ip -o link show 2>/dev/null | sed -n "s/^[0-9]*: \(scl${k}v[0-9]*\)@.*/\1/p"); do
    ip link delete "$v" 2>/dev/null || true
  done
  ip link delete "$br" 2>/dev/null || true
}

case $cmd in
  down) down ;;
  up)
    hosts=${3:?H (number of hosts) is required}
    down
    ip link add "$br" type bridge
    ip addr add "10.213.${k}.254/24" dev "$br"
    ip link set "$br" up
    for ((h = 0; h < hosts; h++)); do
      ns=scl${k}h${h}
      ip netns add "$ns"
      ip link add "scl${k}v${h}" type veth peer name eth0 netns "$ns"
      ip link set "scl${k}v${h}" master "$br" up
      ip -n "$ns" addr add "10.213.${k}.$((h + 1))/24" dev eth0
      ip -n "$ns" link set eth0 up
      ip -n "$ns" link set lo up
      ip -n "$ns" route add default via "10.213.${k}.254"
    done
    ;;
  *) echo "usage: netns-hosts.sh up K H | down K" >&2; exit 2 ;;
esac
