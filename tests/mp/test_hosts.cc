// Case `hosts`: collectives across hosts (run under stratarun --netns, one namespace per host).
//   - allreduce, broadcast, reduce, allgather, reducescatter with counts around the per-host
//     shard and tail boundaries (0, 1, L-1 .. L+1, odd sizes, 1Mi+3), every root, heap and
//     malloc buffers, in place and out of place; every element and guard checked bitwise; small
//     allreduces split over the rails (16384 and 6001 elements); scatter-gather over 4 hosts
//     and more (65537 and 65538 elements); broadcasts down the chain of hosts and beside it
//     (384 KiB-3 MiB, from every host), split over the rails from blocks of 128 KiB, one-sided
//     or as messages.
//     Exact reductions only (integer sum/prod/avg, float max/min): the hierarchy adds floats in
//     another association than rank order, which float32 sum checks below instead.
//   - float32 sum allreduce: bit-identical on every rank, and within rounding of the rank-order
//     reference.
//   - barrier: a rank that arrives 200 ms late holds every other rank on every host.
//   - alltoall, alltoallv, gather, scatter (every root) and a send/recv ring, the same way.
//   - splits: one rank per host (the child spans hosts), one host per child, and keys that
//     interleave hosts (refused with sclInvalidUsage; the parent goes on).
//   - mismatched calls that only the network can see (each host's ranks agree among themselves):
//     another collective, the same one with another op, or with a count large enough to go
//     one-sided on the other hosts only (clear-to-sends meet messages), an allreduce by
//     scatter-gather against the ring, an alltoall by rail against direct messages, and half the
//     hosts in another collective (recursive doubling's later rounds meet the other call's
//     first). On a child of all ranks,
//     every rank's call must fail within seconds, one at least with sclInvalidUsage naming the
//     mismatch, and the parent goes on.
//   - mismatches inside a host: local rank 1 with twice the count of an allreduce (the next call
//     right everywhere), or one element more (the same shards, a tail); with H times the count of
//     an allgather or a reduce-scatter whose others fit one local phase (its first local phase
//     then has their count); against a broadcast split over the rails, one element more (the
//     same blocks, a tail) or an allgather of its block: each fails on every rank, and the next
//     call is right everywhere or fails everywhere. Reduces with twice the count on the root's
//     host, the last host or every host, and a reduce against the others' barrier: the failed
//     host's rails run the call void, and the next call is right everywhere. A reduce to
//     another root, whose void batch waits for a rail that takes no part, and an allreduce
//     against the others' allgather, whose rail peer does not go on through a void message:
//     within seconds, right everywhere or failed everywhere.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "calls.h"
#include "core/hash.h"
#include "reference.h"
#include "tests.h"

namespace mp {
namespace {

const Placement kPlacements[] = {
    {"heap", Mem::kHeap, 0, Mem::kHeap, 0, false},
    {"malloc+1", Mem::kMalloc, 1, Mem::kMalloc, 1, false},
    {"heap", Mem::kHeap, 0, Mem::kHeap, 0, true},
    {"malloc+1", Mem::kMalloc, 0, Mem::kMalloc, 1, true},
};

// The ranks on each host: stratarun --netns sets STRATACL_LOCAL_WORLD_SIZE (1 without it).
int ranks_per_host() {
  const char* per = std::getenv("STRATACL_LOCAL_WORLD_SIZE");
  return per ? std::atoi(per) : 1;
}

void float_sum_is_deterministic(const Comm& w, Tally& tally, size_t count, uint64_t seed) {
  std::vector<float> in(count), out(count), want(count);
  ref::fill_input(in.data(), sclFloat32, ref::Kind::kSum, seed, w.rank, 0, count);
  MP_OK(sclAllReduce(in.data(), out.data(), count, sclFloat32, sclSum, w.comm, nullptr));
  ref::fill_reduced(want.data(), sclFloat32, sclSum, seed, w.n, 0, count);
  CallInfo info{"allreduce float32 sum", sclFloat32, sclSum, count, -1, "across hosts"};
  size_t far = 0;
  for (size_t i = 0; i < count; ++i) {
    // Inputs lie in [-16, 16): a sum of n of them rounds by at most n ulps of 16 * n.
    far += std::fabs(out[i] - want[i]) > float(w.n) * 16.0f * float(w.n) * 1.2e-7f;
  }
  tally.expect(far == 0, info, std::to_string(far) + " elements beyond rounding");
  // Every rank must hold the very same bits.
  uint64_t mine = stratacl::fnv1a(stratacl::kFnvBasis, out.data(), count * sizeof(float));
  std::vector<uint64_t> all(size_t(w.n));
  MP_OK(sclAllGather(&mine, all.data(), 1, sclUint64, w.comm, nullptr));
  for (int r = 0; r < w.n; ++r) {
    tally.expect(all[size_t(r)] == all[0], info, "rank " + std::to_string(r) + " differs");
  }
}

void late_rank_holds_the_barrier(const Comm& w, Tally& tally) {
  const int late = w.n - 1;
  MP_OK(sclBarrier(w.comm, nullptr));
  const double t0 = now();
  if (w.rank == late) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  MP_OK(sclBarrier(w.comm, nullptr));
  const double waited = now() - t0;
  tally.expect(waited > 0.15, CallInfo{"barrier", sclUint8, -1, 0, late, "across hosts"},
               "left after " + std::to_string(waited) + " s, before the late rank arrived");
}

// Splits of a communicator across hosts: one rank per host (a child that spans the hosts), one
// host per child (children without network), and keys that interleave hosts (refused, since
// hosts must hold consecutive ranks; the parent goes on).
template <typename RunOn>
void splits(const Comm& w, Tally& tally, RunOn&& run_on) {
  const int per_host = ranks_per_host();
  const int hosts = w.n / per_host, local = w.rank % per_host;
  const struct {
    const char* name;
    int color, key, ranks;
  } shapes[] = {{"one rank per host", local, w.rank, hosts},
                {"one host", w.rank / per_host, w.rank, per_host}};
  for (const auto& sh : shapes) {
    sclComm_t child = nullptr;
    MP_OK(sclCommSplit(w.comm, sh.color, sh.key, &child, nullptr));
    const Comm c = describe(child);
    tally.expect(c.n == sh.ranks, CallInfo{"split", sclUint8, -1, 0, -1, sh.name},
                 std::to_string(c.n) + " ranks");
    run_on(c, Coll::kAllReduce, sclInt32, sclSum, 4097, -1);
    run_on(c, Coll::kAllGather, sclUint8, -1, 1001, -1);
    run_on(c, Coll::kBroadcast, sclFloat32, -1, 70000, c.n - 1);
    MP_OK(sclCommDestroy(child));
  }
  if (per_host > 1 && hosts > 1) {
    sclComm_t child = nullptr;
    const sclResult_t r =
        sclCommSplit(w.comm, 0, local * hosts + w.rank / per_host, &child, nullptr);
    tally.expect(r == sclInvalidUsage && child == nullptr,
                 CallInfo{"split", sclUint8, -1, 0, -1, "hosts interleaved"},
                 std::string("returned ") + sclGetErrorString(r) + ": " + sclGetLastError(w.comm));
  }
}

void mismatch_fails_everywhere(const Comm& w, Tally& tally) {
  const int per = ranks_per_host(), hosts = w.n / per;
  const bool host0 = w.rank < per;
  // "halves": the first half of the hosts allreduces, the other half allgathers. From 4 hosts
  // the allreduce goes by recursive doubling, whose second round meets the allgather's hosts
  // in another batch than theirs: only receives that match any batch name it at once.
  const bool low_half = w.rank / per < std::max(1, hosts / 2);
  // "large vs small": the other hosts' allreduce is large enough to go one-sided at the
  // default threshold, so their clear-to-sends meet this host's messages.
  const size_t count = 1000, large = size_t(4) << 20;
  std::vector<int32_t> buf(large, 1);
  std::vector<int32_t> gathered(count * size_t(w.n));
  // "medium vs large": host 0's allreduce goes by scatter-gather at 4x1 and 6x1 (by the ring
  // at 2 and 3 hosts, by the direct round at 2x4), against the others' ring of MiB chunks.
  const size_t medium = 50001;
  // "by rail vs direct": host 0's alltoall is small enough to go by rail where hosts have
  // several ranks (one pack per rail peer), the others' large enough to go straight to every
  // remote rank, so a rank receives packs or blocks it did not expect (with one rank per host,
  // both go direct: a count mismatch only).
  const size_t by_rail = 16, direct = size_t(64) << 10;
  std::vector<int32_t> exchanged(direct * size_t(w.n));
  for (const char* what : {"allreduce vs broadcast", "sum vs max", "large vs small",
                           "medium vs large", "by rail vs direct", "halves"}) {
    sclComm_t child = nullptr;
    MP_OK(sclCommSplit(w.comm, 0, w.rank, &child, nullptr));
    const double t0 = now();
    sclResult_t r;
    if (what[0] == 'a' && !host0) {
      r = sclBroadcast(buf.data(), buf.data(), count, sclInt32, 0, child, nullptr);
    } else if (what[0] == 'b') {
      r = sclAlltoAll(buf.data(), exchanged.data(), host0 ? by_rail : direct, sclInt32, child,
                      nullptr);
    } else if (what[0] == 'h' && !low_half) {
      r = sclAllGather(buf.data(), gathered.data(), count, sclInt32, child, nullptr);
    } else {
      const sclRedOp_t op = what[0] == 's' && !host0 ? sclMax : sclSum;
      size_t n = what[0] == 'l' && !host0 ? large : count;
      if (what[0] == 'm') n = host0 ? medium : large;
      r = sclAllReduce(buf.data(), buf.data(), n, sclInt32, op, child, nullptr);
    }
    const double took = now() - t0;
    const std::string msg = sclGetLastError(child);
    const CallInfo info{"mismatch", sclInt32, -1, count, -1, what};
    tally.expect(r != sclSuccess, info, "the call succeeded");
    tally.expect(took < 10, info, "failed after " + std::to_string(took) + " s: " + msg);
    const bool named =
        r == sclInvalidUsage && (msg.find("mismatched calls across hosts") != std::string::npos ||
                                 msg.find("other arguments") != std::string::npos);
    // The others learn it from a rank that saw it: a mismatch all the same.
    const bool told = r == sclInvalidUsage && msg.find("calls mismatched") != std::string::npos;
    tally.expect(named || told || r == sclRemoteError, info,
                 std::string(sclGetErrorString(r)) + ": " + msg);
    MP_OK(sclCommDestroy(child));
    int32_t mine = named, any = 0;
    MP_OK(sclAllReduce(&mine, &any, 1, sclInt32, sclMax, w.comm, nullptr));
    tally.expect(any == 1, info, "no rank named the mismatch");
  }
}

// The verdict where the hosts stay in step through a mismatched call: the first call failed on
// this rank with sclInvalidUsage (or, where `may_succeed`, succeeded: this rank's part went
// out), the second was right here, and both took seconds at most.
void failed_then_right(Tally& tally, const CallInfo& info, sclResult_t first,
                       const std::string& first_msg, bool may_succeed, sclResult_t second,
                       const std::string& second_msg, bool right, double took) {
  tally.expect(first == sclInvalidUsage || (may_succeed && first == sclSuccess), info,
               std::string("the first call: ") + sclGetErrorString(first) + ": " + first_msg);
  tally.expect(right, info,
               std::string("the second call: ") + sclGetErrorString(second) + ": " + second_msg);
  tally.expect(took < 10, info, "the two calls took " + std::to_string(took) + " s");
}

// A mismatch inside one host (its local rank 1 calls with twice the count) fails that host's
// ranks in their local phase, before the rail; they still run the rail's void batches, which the
// other hosts' rails meet (net::Rail::fail_call): the call fails with sclInvalidUsage on every
// rank, and the matched call after it is right everywhere.
void local_mismatch_keeps_hosts_in_step(const Comm& w, Tally& tally) {
  const int per = ranks_per_host();
  if (per < 2) return;  // a lone rank has no local phase to fail in
  const size_t count = 1000;
  std::vector<int32_t> buf(2 * count, 1);
  sclComm_t child = nullptr;
  MP_OK(sclCommSplit(w.comm, 0, w.rank, &child, nullptr));
  const double t0 = now();
  const sclResult_t first = sclAllReduce(buf.data(), buf.data(), w.rank == 1 ? 2 * count : count,
                                         sclInt32, sclSum, child, nullptr);
  const std::string first_msg = sclGetLastError(child);
  for (size_t i = 0; i < count; ++i) buf[i] = w.rank + 1;
  const sclResult_t second =
      sclAllReduce(buf.data(), buf.data(), count, sclInt32, sclSum, child, nullptr);
  const double took = now() - t0;
  bool right = second == sclSuccess;
  for (size_t i = 0; i < count && right; ++i) right = buf[i] == w.n * (w.n + 1) / 2;
  const CallInfo info{"local mismatch", sclInt32, -1, count, -1, "rank 1 calls twice the count"};
  failed_then_right(tally, info, first, first_msg, false, second, sclGetLastError(child), right,
                    took);
  MP_OK(sclCommDestroy(child));
}

// The verdict on a mismatched call inside a host and the call after it: the first failed on this
// rank (sclInvalidUsage where it was named), within seconds with the second, and the second was
// right everywhere or failed everywhere; some rank named the mismatch.
void hosts_in_step(const Comm& w, Tally& tally, const CallInfo& info, sclResult_t first,
                   const std::string& first_msg, sclResult_t second, bool right, double took) {
  const bool named = first == sclInvalidUsage;
  tally.expect(named || first == sclRemoteError, info,
               std::string("the first call: ") + sclGetErrorString(first) + ": " + first_msg);
  tally.expect(second != sclSuccess || right, info, "the second call succeeded with wrong data");
  tally.expect(took < 10, info, "the two calls took " + std::to_string(took) + " s: " + first_msg);
  int32_t flags[3] = {right, -int32_t(right), named}, both[3] = {0, 0, 0};
  MP_OK(sclAllReduce(flags, both, 3, sclInt32, sclMax, w.comm, nullptr));
  tally.expect(both[0] == -both[1], info, "the second call was right on some ranks only");
  tally.expect(both[2] == 1, info, "no rank named the mismatch");
}

// Within every host, local rank 1 allgathers (or reduce-scatters) H times the count of the
// others, each rail alike: the others' buffer fits one local phase (hier/allgather.cc,
// hier/reduce_scatter.cc), rank 1's takes one per host, and its first local step has the count
// of the others' one phase. The call must fail on every rank, named, within seconds, and the
// next call be right everywhere or fail everywhere.
void straddle_keeps_hosts_in_step(const Comm& w, Tally& tally, Coll coll) {
  const int per = ranks_per_host();
  if (per < 2) return;
  // The largest count whose whole buffer (4-byte elements) fits one local phase: 128 KiB.
  const size_t hosts = size_t(w.n / per), count = (size_t(128) << 10) / (4 * size_t(w.n));
  const size_t big = hosts * count, n = size_t(w.n);
  std::vector<int32_t> in(big * n, w.rank + 1), out(big * n);
  const bool gather = coll == Coll::kAllGather;
  sclComm_t child = nullptr;
  MP_OK(sclCommSplit(w.comm, 0, w.rank, &child, nullptr));
  auto issue = [&](size_t c) {
    return gather ? sclAllGather(in.data(), out.data(), c, sclInt32, child, nullptr)
                  : sclReduceScatter(in.data(), out.data(), c, sclInt32, sclSum, child, nullptr);
  };
  const double t0 = now();
  const sclResult_t first = issue(w.rank % per == 1 ? big : count);
  const std::string first_msg = sclGetLastError(child);
  std::fill(out.begin(), out.end(), -1);  // the first call's leftovers must not pass as output
  const sclResult_t second = issue(count);
  const double took = now() - t0;
  bool right = second == sclSuccess;
  for (size_t i = 0; i < (gather ? count * n : count) && right; ++i) {
    right = out[i] == (gather ? int32_t(i / count) + 1 : int32_t(n * (n + 1) / 2));
  }
  const CallInfo info{"local straddle",
                      sclInt32,
                      gather ? -1 : int(sclSum),
                      count,
                      -1,
                      gather ? "local rank 1 allgathers H times the count"
                             : "local rank 1 reduce-scatters H times the count"};
  hosts_in_step(w, tally, info, first, first_msg, second, right, took);
  MP_OK(sclCommDestroy(child));
}

// Local rank 1 of some hosts reduces (to rank 0) twice the count of the others: of the root's
// host, of the last host, or of every host. That host's local step fails; its rail still runs
// the call's network step void (net::Rail::fail_call): where its own host failed, the root's
// rail takes the other hosts' partials off the network (one-sided, its clear-to-sends tell them
// of the failure), and a failed host's rail tells the root instead of sending nothing. So the
// call fails on the failed hosts and the root, named; the other ranks, whose part went out,
// succeed or learn of it. The next reduce is right: the hosts stay in step, where
// one-directional rail steps would otherwise leave a partial for the next call to meet.
void reduce_mismatch_keeps_hosts_in_step(const Comm& w, Tally& tally, int bad_host) {
  const int per = ranks_per_host(), hosts = w.n / per, host = w.rank / per;
  if (per < 2) return;
  const bool failed_host = bad_host < 0 || host == bad_host;
  const size_t count = 1000;
  std::vector<int32_t> in(2 * count, w.rank + 1), out(2 * count, -1);
  sclComm_t child = nullptr;
  MP_OK(sclCommSplit(w.comm, 0, w.rank, &child, nullptr));
  const double t0 = now();
  const size_t mine = failed_host && w.rank % per == 1 ? 2 * count : count;
  const sclResult_t first =
      sclReduce(in.data(), out.data(), mine, sclInt32, sclSum, 0, child, nullptr);
  const std::string first_msg = sclGetLastError(child);
  std::fill(out.begin(), out.end(), -1);
  const sclResult_t second =
      sclReduce(in.data(), out.data(), count, sclInt32, sclSum, 0, child, nullptr);
  const std::string second_msg = sclGetLastError(child);
  const double took = now() - t0;
  bool right = second == sclSuccess;
  for (size_t i = 0; i < count && right && w.rank == 0; ++i) {
    right = out[i] == w.n * (w.n + 1) / 2;
  }
  const std::string which = bad_host < 0            ? "every host"
                            : bad_host == 0         ? "the root's host"
                            : bad_host == hosts - 1 ? "the last host"
                                                    : "host " + std::to_string(bad_host);
  const CallInfo info{"reduce mismatch",
                      sclInt32,
                      int(sclSum),
                      count,
                      0,
                      "local rank 1 reduces twice the count on " + which};
  // The others' part went out; a rail rank among them may have heard of the failure (one-sided,
  // from the root's clear-to-send).
  const bool fails = failed_host || w.rank == 0;
  failed_then_right(tally, info, first, first_msg, !fails, second, second_msg, right, took);
  MP_OK(sclCommDestroy(child));
}

// On the last host, local rank 1 reduces (to rank 0) while every other rank calls a barrier:
// that host's local step fails, its local rank 0 runs the rail barrier void, and the other
// hosts' local rank 0 tells its host's ranks (hier barrier's local broadcast of the outcome), so
// the barrier fails on every rank (rank 1 of the last host in its reduce, whose rail takes no
// part), and the next barrier holds everywhere.
void barrier_mismatch_keeps_hosts_in_step(const Comm& w, Tally& tally) {
  const int per = ranks_per_host();
  if (per < 2) return;
  sclComm_t child = nullptr;
  MP_OK(sclCommSplit(w.comm, 0, w.rank, &child, nullptr));
  int32_t in = 1, out = 0;
  const double t0 = now();
  const sclResult_t first = w.rank == w.n - per + 1
                                ? sclReduce(&in, &out, 1, sclInt32, sclSum, 0, child, nullptr)
                                : sclBarrier(child, nullptr);
  const std::string first_msg = sclGetLastError(child);
  const sclResult_t second = sclBarrier(child, nullptr);
  const double took = now() - t0;
  const CallInfo info{
      "barrier mismatch", sclInt32, -1, 1, -1, "local rank 1 of the last host reduces"};
  failed_then_right(tally, info, first, first_msg, false, second, sclGetLastError(child),
                    second == sclSuccess, took);
  MP_OK(sclCommDestroy(child));
}

// On the last host, local rank 1 reduces to itself, the others to rank 0: it drives the rail of
// its local index as the root's, where no rank of that rail takes part. Its void batch waits
// net::Rail::kFailedCallPatienceMs for them, then ends the endpoint: the communicator is
// revoked, every rank's call fails or is right within seconds, none waits for its deadline.
void reduce_to_another_root_ends_within_seconds(const Comm& w, Tally& tally) {
  const int per = ranks_per_host();
  if (per < 2) return;
  sclComm_t child = nullptr;
  MP_OK(sclCommSplit(w.comm, 0, w.rank, &child, nullptr));
  const int odd = w.n - per + 1;
  const size_t count = 1000;
  std::vector<int32_t> in(count, w.rank + 1), out(count, -1);
  const double t0 = now();
  const sclResult_t first = sclReduce(in.data(), out.data(), count, sclInt32, sclSum,
                                      w.rank == odd ? odd : 0, child, nullptr);
  const std::string first_msg = sclGetLastError(child);
  std::fill(out.begin(), out.end(), -1);
  const sclResult_t second =
      sclReduce(in.data(), out.data(), count, sclInt32, sclSum, 0, child, nullptr);
  const double took = now() - t0;
  bool right = second == sclSuccess;
  for (size_t i = 0; i < count && right && w.rank == 0; ++i) {
    right = out[i] == w.n * (w.n + 1) / 2;
  }
  const CallInfo info{"reduce to another root",
                      sclInt32,
                      int(sclSum),
                      count,
                      0,
                      "local rank 1 of the last host reduces to itself"};
  if (w.rank == odd || w.rank == 0) {
    tally.expect(first == sclInvalidUsage, info,
                 std::string("the first call: ") + sclGetErrorString(first) + ": " + first_msg);
  }
  tally.expect(second != sclSuccess || right, info, "the second call succeeded with wrong data");
  tally.expect(took < 10, info, "the two calls took " + std::to_string(took) + " s: " + first_msg);
  MP_OK(sclCommDestroy(child));
}

// World rank 1 allreduces while every other rank allgathers: host 0's ranks fail in a local
// step, and rank 1 runs its allreduce's rail batch void. Its rail peer, in an allgather, which
// returns at a failure its rail reports instead of going on through its local steps, must not
// take that void message as this call's failure (its host's other rank would wait in the local
// allgather it skipped, and pair with its next call's): another collective's message ends the
// endpoint there, and the communicator with it. Every rank's call fails within seconds, and the
// next call fails everywhere or is right everywhere.
void local_kind_mismatch_fails_everywhere(const Comm& w, Tally& tally) {
  const int per = ranks_per_host();
  if (per < 2) return;
  const size_t count = 1000, n = size_t(w.n);
  std::vector<int32_t> in(count, w.rank + 1), out(count * n, -1);
  sclComm_t child = nullptr;
  MP_OK(sclCommSplit(w.comm, 0, w.rank, &child, nullptr));
  const double t0 = now();
  const sclResult_t first =
      w.rank == 1 ? sclAllReduce(in.data(), out.data(), count, sclInt32, sclSum, child, nullptr)
                  : sclAllGather(in.data(), out.data(), count, sclInt32, child, nullptr);
  const std::string first_msg = sclGetLastError(child);
  std::fill(out.begin(), out.end(), -1);
  const sclResult_t second = sclAllGather(in.data(), out.data(), count, sclInt32, child, nullptr);
  const double took = now() - t0;
  bool right = second == sclSuccess;
  for (size_t i = 0; i < count * n && right; ++i) right = out[i] == int32_t(i / count) + 1;
  const CallInfo info{
      "local kind mismatch", sclInt32, -1, count, -1, "rank 1 allreduces, the others allgather"};
  hosts_in_step(w, tally, info, first, first_msg, second, right, took);
  MP_OK(sclCommDestroy(child));
}

// Within every host, local rank 1 allreduces one element more than the others, at a size the
// hierarchy splits into shards (hier/allreduce.cc): the shards are the same, and only the tail
// differs. The call must fail on every rank, named, within seconds (not leave rank 1 alone in a
// local step for its tail), and the next call be right everywhere or fail everywhere.
void allreduce_tail_mismatch_fails_everywhere(const Comm& w, Tally& tally) {
  const int per = ranks_per_host();
  if (per < 2) return;
  const size_t count = 100000, n = size_t(w.n);
  std::vector<int32_t> buf(count + 1);
  sclComm_t child = nullptr;
  MP_OK(sclCommSplit(w.comm, 0, w.rank, &child, nullptr));
  const double t0 = now();
  std::fill(buf.begin(), buf.end(), 1);
  const sclResult_t first =
      sclAllReduce(buf.data(), buf.data(), w.rank % per == 1 ? count + 1 : count, sclInt32, sclSum,
                   child, nullptr);
  const std::string first_msg = sclGetLastError(child);
  std::fill(buf.begin(), buf.end(), w.rank + 1);
  const sclResult_t second =
      sclAllReduce(buf.data(), buf.data(), count, sclInt32, sclSum, child, nullptr);
  const double took = now() - t0;
  bool right = second == sclSuccess;
  for (size_t i = 0; i < count && right; ++i) right = buf[i] == int32_t(n * (n + 1) / 2);
  const CallInfo info{"allreduce tail mismatch",
                      sclInt32,
                      int(sclSum),
                      count,
                      -1,
                      "local rank 1 allreduces one element more"};
  hosts_in_step(w, tally, info, first, first_msg, second, right, took);
  MP_OK(sclCommDestroy(child));
}

// Within every host, local rank 1 calls what its rail peers call, but not what its host calls:
// a broadcast split over the rails (hier/broadcast.cc) whose count is one element longer (the
// same blocks, a tail), or an allgather of the broadcast's block. Only the local steps can tell;
// the call must fail on every rank, named, within seconds, and the next broadcast be right
// everywhere or fail everywhere. On the root's host the scatter fails before its rails send;
// they send the call's failure instead (net::Rail::fail_call), so that the other hosts'
// receives never meet the next call's messages. Blocks of 128 KiB go one-sided where the tests'
// threshold is 1 byte, and as messages at the default 256 KiB (2x4).
void split_broadcast_mismatch_fails_everywhere(const Comm& w, Tally& tally, bool allgather,
                                               size_t block_bytes) {
  const int per = ranks_per_host();
  if (per < 2) return;
  const size_t block = block_bytes / 4, count = block * size_t(per), n = size_t(w.n);
  std::vector<int32_t> buf(count + 1), out(block * n);
  sclComm_t child = nullptr;
  MP_OK(sclCommSplit(w.comm, 0, w.rank, &child, nullptr));
  const bool odd = w.rank % per == 1;
  const double t0 = now();
  std::fill(buf.begin(), buf.end(), w.rank + 1);
  const sclResult_t first =
      odd && allgather ? sclAllGather(buf.data(), out.data(), block, sclInt32, child, nullptr)
                       : sclBroadcast(buf.data(), buf.data(), odd ? count + 1 : count, sclInt32, 0,
                                      child, nullptr);
  const std::string first_msg = sclGetLastError(child);
  std::fill(buf.begin(), buf.end(), w.rank + 1);
  const sclResult_t second =
      sclBroadcast(buf.data(), buf.data(), count, sclInt32, 0, child, nullptr);
  const double took = now() - t0;
  bool right = second == sclSuccess;
  for (size_t i = 0; i < count && right; ++i) right = buf[i] == 1;
  const CallInfo info{"split broadcast mismatch",
                      sclInt32,
                      -1,
                      count,
                      0,
                      allgather ? "local rank 1 allgathers the broadcast's block"
                                : "local rank 1 broadcasts one element more"};
  hosts_in_step(w, tally, info, first, first_msg, second, right, took);
  MP_OK(sclCommDestroy(child));
}

}  // namespace

int run_hosts(int argc, char**) {
  if (argc != 0) fatal("hosts: takes no arguments");
  const Comm& w = world();
  Tally& tally = global_tally();
  uint64_t call_index = 0;
  auto run_on = [&](const Comm& on, Coll coll, sclDataType_t dtype, int op, size_t count,
                    int root) {
    for (const Placement& pl : kPlacements) {
      if (pl.in_place && !has_in_place(coll)) continue;
      CallSpec spec;
      spec.coll = coll;
      spec.dtype = dtype;
      spec.op = op;
      spec.count = count;
      spec.root = root;
      spec.placement = pl;
      spec.seed = ref::make_seed(0x4057, ++call_index);
      PreparedCall call(on, spec);
      const sclResult_t r = call.issue(nullptr);
      if (r != sclSuccess) {
        fatal("%s returned %d (%s): %s", call.info().text().c_str(), int(r), sclGetErrorString(r),
              sclGetLastError(on.comm));
      }
      call.verify(tally);
    }
  };
  auto run = [&](Coll coll, sclDataType_t dtype, int op, size_t count, int root) {
    run_on(w, coll, dtype, op, count, root);
  };
  const size_t n = size_t(w.n);
  const struct {
    sclDataType_t dtype;
    sclRedOp_t op;
  } exact[] = {{sclInt32, sclSum}, {sclInt64, sclProd},  {sclFloat32, sclMax},
               {sclUint8, sclAvg}, {sclFloat64, sclMin}, {sclInt32, sclAvg}};
  for (size_t count : {size_t(0), size_t(1), n - 1, n, n + 1, size_t(1000), size_t(65537)}) {
    for (const auto& e : exact) {
      run(Coll::kAllReduce, e.dtype, e.op, count, -1);
      run(Coll::kReduceScatter, e.dtype, e.op, count, -1);
      for (int root = 0; root < w.n; ++root) run(Coll::kReduce, e.dtype, e.op, count, root);
    }
    for (int root = 0; root < w.n; ++root) run(Coll::kBroadcast, sclUint8, -1, count, root);
    run(Coll::kAllGather, sclFloat32, -1, count, -1);
    run(Coll::kAllGather, sclUint8, -1, count, -1);
    run(Coll::kAlltoAll, sclInt32, -1, count, -1);
    run(Coll::kAlltoAllv, sclUint8, -1, count, -1);
    run(Coll::kSendRecvRing, sclFloat64, -1, count, -1);
    for (int root = 0; root < w.n; ++root) {
      run(Coll::kGather, sclInt64, -1, count, root);
      run(Coll::kScatter, sclUint8, -1, count, root);
    }
  }
  // Small allreduces split over the rails once the copies a host's rails would send alike are
  // large (hier/allreduce.cc): 16384 4-byte elements at 2x2, 3x2 and 2x4 (no tail); 6001 8-byte
  // ones at 3x2 and 2x4, and 4-byte ones at 2x4, with a tail of one element.
  for (size_t count : {size_t(16384), size_t(6001)}) {
    for (const auto& e : exact) run(Coll::kAllReduce, e.dtype, e.op, count, -1);
  }
  // From 4 hosts a rail allreduce above 64 KiB scatters and gathers while H - 1 of its chunks
  // total at most 192 KiB (net/rail.h): at 4x1 the 1- and 4-byte ones of 65537 and 65538
  // elements (one host's chunk one element longer, or two hosts'), while the 8-byte ones take
  // the ring; at 6x1 the 1-byte ones (65537 = 6 x 10922 + 5), the 4-byte ones the ring.
  for (const auto& e : exact) run(Coll::kAllReduce, e.dtype, e.op, 65538, -1);
  run(Coll::kAllReduce, sclInt32, sclProd, 65538, -1);  // a product by scatter-gather too
  const size_t big = (size_t(1) << 20) + 3;
  run(Coll::kAllReduce, sclInt32, sclSum, big, -1);
  run(Coll::kBroadcast, sclFloat32, -1, big, w.n - 1);
  // From 3 hosts a large broadcast goes down a chain of hosts in segments where that costs less
  // than the flat one (Rail::chain_segments; the unit tests check its counts). Segments at 3, 4
  // and 6 hosts: 384 KiB + 1 flat, 2, 3; 512 KiB flat (a tie), 3, 4; 512 KiB + 5 2, 3, 4;
  // 1 MiB + 3 3, 4, 6; 3 MiB + 1 5, 7, 10 (and the 4 MiB + 12 above 6, 8, 11). Below the
  // default one-sided threshold (256 KiB) segments go as messages: the three smaller sizes at 4
  // and 6 hosts, 1 MiB + 3 at 6. Sizes that do not divide, from the first and last rank of each
  // host. With several ranks per host they split over the rails where a rail's block is at least
  // 128 KiB (hier::broadcast_splits): all five at 2x2 and 3x2 (every transfer one-sided there),
  // where at 3x2 each rail's chain takes the whole buffer's segment count (flat, flat, 2, 3, 5:
  // down to 128 KiB + 1 per segment); at 2x4 (one-sided from 256 KiB) the last four: blocks of
  // 128 KiB (messages) with tails of 0 and 1 element, and of 256 KiB and 768 KiB with tails of
  // 3 and 1.
  const int per_host = ranks_per_host();
  for (size_t count : {(size_t(384) << 10) + 1, size_t(512) << 10, (size_t(512) << 10) + 5,
                       (size_t(1) << 20) + 3, (size_t(3) << 20) + 1}) {
    for (int root = 0; root < w.n; ++root) {
      if (root % per_host == 0 || root % per_host == per_host - 1) {
        run(Coll::kBroadcast, sclUint8, -1, count, root);
      }
    }
  }
  run(Coll::kReduce, sclInt32, sclSum, big, 0);
  run(Coll::kAllGather, sclFloat32, -1, big / n, -1);
  run(Coll::kReduceScatter, sclInt32, sclSum, big / n, -1);
  run(Coll::kAlltoAll, sclFloat32, -1, big / n, -1);
  run(Coll::kAlltoAllv, sclFloat32, -1, big / n, -1);
  run(Coll::kSendRecvRing, sclFloat32, -1, big, -1);
  for (size_t count : {size_t(7), size_t(16384), size_t(50001), size_t(100003), big}) {
    float_sum_is_deterministic(w, tally, count, ref::make_seed(0xF10A7, count));
  }
  late_rank_holds_the_barrier(w, tally);

  splits(w, tally, run_on);
  mismatch_fails_everywhere(w, tally);
  local_mismatch_keeps_hosts_in_step(w, tally);
  straddle_keeps_hosts_in_step(w, tally, Coll::kAllGather);
  straddle_keeps_hosts_in_step(w, tally, Coll::kReduceScatter);
  allreduce_tail_mismatch_fails_everywhere(w, tally);
  for (int bad_host : {0, w.n / ranks_per_host() - 1, -1}) {
    reduce_mismatch_keeps_hosts_in_step(w, tally, bad_host);
  }
  barrier_mismatch_keeps_hosts_in_step(w, tally);
  local_kind_mismatch_fails_everywhere(w, tally);
  reduce_to_another_root_ends_within_seconds(w, tally);
  for (size_t block_bytes : {size_t(128) << 10, size_t(256) << 10}) {
    split_broadcast_mismatch_fails_everywhere(w, tally, false, block_bytes);
    split_broadcast_mismatch_fails_everywhere(w, tally, true, block_bytes);
  }
  run(Coll::kAllReduce, sclInt32, sclSum, 1000, -1);  // the parent goes on
  return finish("hosts");
}

}  // namespace mp
