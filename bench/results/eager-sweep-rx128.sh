# The eager sweep again once rxm's receive buffers were set (FI_OFI_RXM_MSG_RX_SIZE=128, the
# library's default): does the 1 MiB collapse at 4 hosts remain? Namespaces 241 (2 hosts) and
# 242 (4 hosts) made beforehand with scripts/netns-hosts.sh up K H. Each collective alone in its
# launch; eager limit and one-sided threshold both T; 3 interleaved repeats.
cd /work/main
out=/tmp/sweep-rx128.csv; : > $out
for rep in 1 2 3; do
 for lay in "241 2 2" "241 4 2" "242 4 4"; do
  set -- $lay; k=$1 n=$2 h=$3
  ns=$(seq -s, -f "scl${k}h%g" 0 $((h-1)))
  for c in allreduce reducescatter allgather alltoall broadcast; do
  for T in 262144 1048576; do
   csv=/tmp/swr.$k.$n.$c.$T.$rep.csv; rm -f $csv
   FI_OFI_RXM_EAGER_LIMIT=$T STRATACL_NET_ONE_SIDED_MIN_BYTES=$T timeout -s KILL 120 build/tools/stratarun -n $n --netns $ns --root-addr 10.213.$k.254 build/tools/scl-bench $c -b 128K -e 4M -f 2 -n 20 -w 3 -c 1 --mode zerocopy --csv $csv > /dev/null 2>&1 || echo "fail $k $n $c $T $rep"
   awk -v T=$T -v L="${h}x$((n/h))" -v r=$rep '$0 !~ /^#/ && $1 != "collective" {print L","T","r","$0}' $csv >> $out
  done
  done
 done
done
