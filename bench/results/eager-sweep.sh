# The loops that measured bench/results/eager-sweep-{alone,five}.csv (namespaces 241-243 made
# beforehand with scripts/netns-hosts.sh up K H). bench/ab-hosts with two variables does the same.
# each collective alone per launch; eager/one-sided threshold T; interleaved repeats
cd /work/main
out=/tmp/sweep3.csv; : > $out
for rep in 1 2 3; do
 for lay in "241 2 2" "243 4 2" "242 4 4"; do
  set -- $lay; k=$1 n=$2 h=$3
  ns=$(seq -s, -f "scl${k}h%g" 0 $((h-1)))
  for c in allreduce reducescatter allgather alltoall broadcast; do
  for T in 131072 262144 1048576; do
   csv=/tmp/sw3.$k.$c.$T.$rep.csv; rm -f $csv
   FI_OFI_RXM_EAGER_LIMIT=$T STRATACL_NET_ONE_SIDED_MIN_BYTES=$T timeout -s KILL 120 build/tools/stratarun -n $n --netns $ns --root-addr 10.213.$k.254 build/tools/scl-bench $c -b 128K -e 4M -f 2 -n 20 -w 3 -c 1 --mode zerocopy --csv $csv > /dev/null 2>&1 || echo "fail $k $c $T $rep"
   awk -v T=$T -v L="${h}x$((n/h))" -v r=$rep '$0 !~ /^#/ {print L","T","r","$0}' $csv >> $out  # header rows dropped afterwards
  done
  done
 done
done
