#!/usr/bin/env bash
# Loses a host mid-run: 2 hosts (network namespaces) x 2 ranks loop over allreduces, then every
# rank of host 1 is SIGKILLed ("kill"), or host 1's link goes down ("link"), or rank 3 (host 1)
# calls sclCommAbort by itself ("abort"). Every rank still
# running must report the failure soon after the heartbeat's loss time, long before the call
# timeout (fault_tests host_loss checks each), and no rank may hang until stratarun has to
# terminate it. With "stall", every rank of both hosts is stopped for 2.5 loss times and resumed:
# nobody was lost, and every rank must go on without an error.
#   host_loss.sh STRATARUN FAULT_TESTS NETNS_SCRIPT K kill|link|abort|stall
set -u
stratarun=$1 fault_tests=$2 netns=$3 k=$4 how=$5
[ "$(id -u)" -eq 0 ] || { echo "host_loss: needs root to create network namespaces"; exit 1; }
out=$(mktemp)
trap '"$netns" down "$k"; rm -f "$out"' EXIT
"$netns" up "$k" 2 || exit 1
fail() { cat "$out"; echo "host_loss: FAILED: $*"; exit 1; }
lost_ms=1000
STRATACL_TIMEOUT_MS=20000 STRATACL_NET_LOST_MS=$lost_ms "$stratarun" -n 4 --grace 20 --timeout 200 \
  --netns "scl${k}h0,scl${k}h1" --root-addr "10.213.${k}.254" \
  "$fault_tests" host_loss $((lost_ms / 1000)) "$how" >"$out" 2>&1 &
job=$!
for _ in $(seq 600); do
  [ "$(grep -c RUNNING "$out")" -ge 4 ] && break
  kill -0 $job 2>/dev/null || fail "the job ended before the loss"
  sleep 0.1
done
[ "$(grep -c RUNNING "$out")" -ge 4 ] || fail "the ranks never got going"
start=$(date +%s%N)
if [ "$how" = kill ]; then
  kill -9 $(ip netns pids "scl${k}h1") || fail "no rank to kill in host 1"
  want=2
elif [ "$how" = link ]; then
  ip link set "scl${k}v1" down || fail "cannot take the link down"
  want=4
elif [ "$how" = stall ]; then
  ranks=$(ip netns pids "scl${k}h0"; ip netns pids "scl${k}h1")
  kill -STOP $ranks || fail "no rank to stop"
  sleep $((lost_ms * 5 / 2))e-3
  kill -CONT $ranks
  want=0
else
  want=3 # rank 3 aborts by itself; the others report
fi
wait $job
rc=$?
took_ms=$(( ($(date +%s%N) - start) / 1000000 ))
# Killed ranks fail the job; otherwise every rank reports (or aborts) and exits 0 by itself.
if [ "$how" = kill ]; then
  [ "$rc" -eq 137 ] || fail "stratarun exited $rc, want 137 (the SIGKILL)"
else
  [ "$rc" -eq 0 ] || fail "stratarun exited $rc: a rank failed its checks"
fi
survivors=$(grep -o "rank [0-9]*: SURVIVED" "$out" | sort -u | wc -l)
[ "$survivors" -eq "$want" ] || fail "$survivors of $want ranks reported the loss"
grep -q "FAILED" "$out" && fail "a rank saw the wrong thing"
grep -q "terminating rank" "$out" && fail "stratarun had to terminate a rank (it hung)"
if [ "$how" = stall ]; then
  steady=$(grep -o "rank [0-9]*: STEADY" "$out" | sort -u | wc -l)
  [ "$steady" -eq 4 ] || fail "$steady of 4 ranks went on after the stall"
fi
cat "$out"
echo "host_loss: $how: $survivors ranks reported the failure; the job ended ${took_ms} ms after it"
