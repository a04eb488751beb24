#!/bin/bash
cd "$(dirname "$0")/../../.."
# Each layout and setting: a 45 s soak across hosts (root: network namespaces); its log goes to
# /tmp/soak-matrix-H-N-SEED.log, one line per run to stdout (matrix.txt).
run() { h=$1 n=$2 seed=$3; shift 3; k=248; ./scripts/netns-hosts.sh up $k $h >/dev/null; list=$(seq -s, -f "scl${k}h%g" 0 $((h-1)));
  env STRATACL_TIMEOUT_MS=60000 "$@" build/tools/stratarun -n $n --timeout 300 --netns $list --root-addr 10.213.$k.254 build/tests/soak/soak --exact --seconds 45 --seed $seed > /tmp/soak-matrix-$h-$n-$seed.log 2>&1; rc=$?
  echo "$h x $((n/h)) seed $seed [$*] rc=$rc $(grep -E 'passed, .* failed' /tmp/soak-matrix-$h-$n-$seed.log | tail -1) $(grep -m1 FATAL /tmp/soak-matrix-$h-$n-$seed.log | cut -c1-300)"; ./scripts/netns-hosts.sh down $k; }
run 4 8 11 STRATACL_NET_ONE_SIDED_MIN_BYTES=1
run 3 6 12 STRATACL_THREADS=2 STRATACL_COPY_ENGINES=1
run 2 8 13 X=1
run 5 5 14 STRATACL_NET_DOUBLING_MIN_HOSTS=-1
run 3 9 15 STRATACL_NET_PACE_CALLS=1 STRATACL_NET_TREE_RADIX=3
run 2 4 16 STRATACL_NET_ONE_SIDED_MIN_BYTES=-1 STRATACL_STAGING_BYTES=65536
run 6 6 17 STRATACL_NET_TREE_RADIX=4
echo done
