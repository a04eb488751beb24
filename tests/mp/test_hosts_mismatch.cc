// Part of case `hosts` (test_hosts.cc): mismatched calls across hosts.
//   - mismatched calls that only the network can see (each host's ranks agree among themselves):
//     another collective, the same one with another op, or with a count large enough to go
//     one-sided on the other hosts only (clear-to-sends meet messages), an allreduce by
//     scatter-gather against the ring, an alltoall by rail against direct messages, half the
//     hosts in another collective (recursive doubling's later rounds meet the other call's
//     first), and an allreduce against an alltoall or a gather (rail messages against a world
//     batch), a spread reduce-scatter against the direct round, a premulsum against a sum. On a
//     child of all ranks, every rank's call must fail within seconds, one at least with
//     sclInvalidUsage naming the mismatch, and the parent goes on.
//   - mismatches inside a host: local rank 1 with twice the count of an allreduce (the next call
//     right everywhere), or one element more (the same shards, a tail); with H times the count of
//     an allgather or a reduce-scatter (its local step of H runs has H times their count, as the
//     H phases of an earlier form had their one phase's); against a broadcast split over the rails,
//     one element more (the same blocks, a tail) or an allgather of its block: each fails on every
//     rank, and the next call is right everywhere or fails everywhere. Reduces with twice the count
//     on the root's host, the last host or every host, and a reduce against the others' barrier:
//     the failed host's rails run the call void, and the next call is right everywhere. A reduce to
//     another root, whose void batch waits for a rail that takes no part, and an allreduce
//     against the others' allgather, whose rail peer does not go on through a void message:
//     within seconds, right everywhere or failed everywhere. Local rank 1's small allreduce against
//     the others' reduce-scatter, both spread over a host's ranks: the same, named.
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "calls.h"
#include "hosts.h"

namespace mp {
namespace {

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
  std::vector<int32_t> buf(large, 1), gathered(count * size_t(w.n));
  // "medium vs large": host 0's allreduce goes by scatter-gather at 4x1 and 6x1 (by the ring
  // at 2 and 3 hosts, by the direct round at 2x4), against the others' ring of MiB chunks.
  const size_t medium = 50001;
  // "by rail vs direct": host 0's alltoall is small enough to go by rail where hosts have several
  // ranks (one pack per rail peer), the others' large enough to go straight to every remote rank,
  // so a rank receives packs or blocks it did not expect (with one rank per host, a count mismatch:
  // from 4 hosts host 0's rounds, rail batches, against the others' world batch; at 2 and 3 hosts
  // both direct, the others' blocks of 256 KiB one-sided, host 0's messages).
  const size_t by_rail = 16, direct = size_t(64) << 10;
  // "rail vs world": host 0 allreduces, the others alltoall: the allreduce's messages go along
  // the rails, the alltoall's are a world batch (net::Rail::exchange_even), and each side's
  // receives must still meet the other's messages (where the alltoall goes in Bruck's rounds, at
  // 4x1 and 6x1, rail batches on both sides, whose first rounds both send up the hosts). "gather vs
  // rail": the others gather to rank 0, whose allreduce's receive meets their blocks, while they
  // wait for its size words.
  std::vector<int32_t> exchanged(direct * size_t(w.n));
  // "direct vs spread": host 0's reduce-scatter is small enough to go spread over a host's ranks
  // at 3 hosts of several ranks (local rank l sends to host l + 1 only), the others' too large
  // (the rail's direct round, where every rank sends to every host): rails whose batches pair
  // up only in part. Elsewhere the two counts take the paths their sizes choose there.
  const size_t spread = 100, unspread = 4096;
  for (const char* what : {"allreduce vs broadcast", "sum vs max", "large vs small",
                           "medium vs large", "by rail vs direct", "halves", "rail vs world",
                           "gather vs rail", "direct vs spread", "premulsum vs sum"}) {
    sclComm_t child = nullptr;
    MP_OK(sclCommSplit(w.comm, 0, w.rank, &child, nullptr));
    const double t0 = now();
    sclResult_t r;
    if (what[0] == 'a' && !host0) {
      r = sclBroadcast(buf.data(), buf.data(), count, sclInt32, 0, child, nullptr);
    } else if (what[0] == 'b') {
      r = sclAlltoAll(buf.data(), exchanged.data(), host0 ? by_rail : direct, sclInt32, child,
                      nullptr);
    } else if (what[0] == 'r' && !host0) {
      r = sclAlltoAll(buf.data(), exchanged.data(), count, sclInt32, child, nullptr);
    } else if (what[0] == 'g' && !host0) {
      r = sclGather(buf.data(), gathered.data(), count, sclInt32, 0, child, nullptr);
    } else if (what[0] == 'd') {
      r = sclReduceScatter(buf.data(), exchanged.data(), host0 ? spread : unspread, sclInt32,
                           sclSum, child, nullptr);
    } else if (what[0] == 'h' && !low_half) {
      r = sclAllGather(buf.data(), gathered.data(), count, sclInt32, child, nullptr);
    } else {
      sclRedOp_t op = what[0] == 's' && !host0 ? sclMax : sclSum;
      int32_t one = 1;  // "premulsum vs sum": host 0's data, inputs scaled by 1, but another op
      if (what[0] == 'p' && !host0)
        MP_OK(sclRedOpCreatePreMulSum(&op, &one, sclInt32, sclScalarHostImmediate, child));
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
    // A named mismatch names the peer's host, or its node where the hosts are cut into nodes.
    const std::string unit = std::string("(") + host_unit() + " ";
    tally.expect(!named || msg.find(unit) != std::string::npos, info,
                 "names no \"" + unit + "\": " + msg);
    MP_OK(sclCommDestroy(child));
    int32_t mine = named, any = 0;
    MP_OK(sclAllReduce(&mine, &any, 1, sclInt32, sclMax, w.comm, nullptr));
    tally.expect(any == 1, info, "no rank named the mismatch");
  }
}

}  // namespace

void failed_then_right(Tally& tally, const CallInfo& info, sclResult_t first,
                       const std::string& first_msg, bool may_succeed, sclResult_t second,
                       const std::string& second_msg, bool right, double took) {
  tally.expect(first == sclInvalidUsage || (may_succeed && first == sclSuccess), info,
               std::string("the first call: ") + sclGetErrorString(first) + ": " + first_msg);
  tally.expect(right, info,
               std::string("the second call: ") + sclGetErrorString(second) + ": " + second_msg);
  tally.expect(took < 10, info, "the two calls took " + std::to_string(took) + " s");
}

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

namespace {

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

// Within every host, local rank 1 allgathers (or reduce-scatters) H times the count of the
// others, each rail alike. Its local step of H runs (hier/allgather.cc, hier/reduce_scatter.cc)
// has H times the others' count; in an earlier form, where the others' buffer took one local
// phase and rank 1's one per host, its first local step had the count of the others' one phase.
// The call must fail on every rank, named, within seconds, and the next call be right
// everywhere or fail everywhere.
void straddle_keeps_hosts_in_step(const Comm& w, Tally& tally, Coll coll) {
  const int per = ranks_per_host();
  if (per < 2) return;
  // The count whose whole buffer (4-byte elements) is 128 KiB, the earlier form's one phase.
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

// On a child of all ranks: `first(child)`, a mismatched call, then `second(child, &right)`, a
// matched one, which says whether its result was right; the hosts must stay in step through both.
template <typename First, typename Second>
void mismatch_then_matched(const Comm& w, Tally& tally, const CallInfo& info, First&& first,
                           Second&& second) {
  sclComm_t child = nullptr;
  MP_OK(sclCommSplit(w.comm, 0, w.rank, &child, nullptr));
  const double t0 = now();
  const sclResult_t r1 = first(child);
  const std::string first_msg = sclGetLastError(child);
  bool right = false;
  const sclResult_t r2 = second(child, &right);
  hosts_in_step(w, tally, info, r1, first_msg, r2, r2 == sclSuccess && right, now() - t0);
  MP_OK(sclCommDestroy(child));
}

// Within every host, local rank 1 allreduces W times the count of the others' reduce-scatter (W
// the world's ranks), small enough that both go spread over a host's ranks from 3 hosts
// (hier/spread.h): both begin with a local allreduce of the same count, told apart only by the
// root in its signature. The call must fail on every rank, named, within seconds, and the next
// reduce-scatter be right everywhere or fail everywhere.
void spread_kind_mismatch_fails_everywhere(const Comm& w, Tally& tally) {
  const int per = ranks_per_host();
  if (per < 2) return;
  const size_t count = 100, n = size_t(w.n);
  std::vector<int32_t> in(count * n, w.rank + 1), out(count * n, -1);
  const CallInfo info{"spread kind mismatch",
                      sclInt32,
                      int(sclSum),
                      count,
                      -1,
                      "local rank 1 allreduces W times the others' reduce-scatter"};
  mismatch_then_matched(
      w, tally, info,
      [&](sclComm_t child) {
        return w.rank % per == 1 ? sclAllReduce(in.data(), out.data(), count * n, sclInt32, sclSum,
                                                child, nullptr)
                                 : sclReduceScatter(in.data(), out.data(), count, sclInt32, sclSum,
                                                    child, nullptr);
      },
      [&](sclComm_t child, bool* right) {
        std::fill(out.begin(), out.end(), -1);
        const sclResult_t r =
            sclReduceScatter(in.data(), out.data(), count, sclInt32, sclSum, child, nullptr);
        *right = std::all_of(out.begin(), out.begin() + ptrdiff_t(count),
                             [&](int32_t v) { return v == int32_t(n * (n + 1) / 2); });
        return r;
      });
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
  const CallInfo info{"allreduce tail mismatch",
                      sclInt32,
                      int(sclSum),
                      count,
                      -1,
                      "local rank 1 allreduces one element more"};
  mismatch_then_matched(
      w, tally, info,
      [&](sclComm_t child) {
        std::fill(buf.begin(), buf.end(), 1);
        return sclAllReduce(buf.data(), buf.data(), w.rank % per == 1 ? count + 1 : count, sclInt32,
                            sclSum, child, nullptr);
      },
      [&](sclComm_t child, bool* right) {
        std::fill(buf.begin(), buf.end(), w.rank + 1);
        const sclResult_t r =
            sclAllReduce(buf.data(), buf.data(), count, sclInt32, sclSum, child, nullptr);
        *right = std::all_of(buf.begin(), buf.begin() + ptrdiff_t(count),
                             [&](int32_t v) { return v == int32_t(n * (n + 1) / 2); });
        return r;
      });
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

void mismatches_across_hosts(const Comm& w, Tally& tally) {
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
  spread_kind_mismatch_fails_everywhere(w, tally);
  reduce_to_another_root_ends_within_seconds(w, tally);
  exchange_mismatches_keep_hosts_in_step(w, tally);
  for (size_t block_bytes : {size_t(128) << 10, size_t(256) << 10}) {
    split_broadcast_mismatch_fails_everywhere(w, tally, false, block_bytes);
    split_broadcast_mismatch_fails_everywhere(w, tally, true, block_bytes);
  }
}

}  // namespace mp
