// Case `order`: calls run in issue order, and groups never deadlock.
//  1. Issue order on one communicator: 300 pairs of (stream allreduce, NULL-stream allreduce),
//     every call with its own data. The NULL-stream call must run after the stream call issued
//     before it, on every rank, or ranks pair different calls and sum the wrong buffers.
//  2. Groups across communicators in opposite orders: even ranks group AllReduce(A) then
//     AllReduce(B), odd ranks B then A. And point-to-point across them: rank 0 groups Send on A
//     with Recv on B, rank 1 Send on B with Recv on A; run one communicator after the other,
//     either would wait forever for the other's send. Both complete.
//  3. Group parts are keyed by (communicator, stream): a group's call on stream s2 runs on s2,
//     so sclStreamSynchronize(s2) waits for it (rank 1 starts late, so the call is still
//     pending on the other ranks when the group ends).
// Every output element is checked.
#include <unistd.h>

#include <vector>

#include "harness.h"
#include "tests.h"

namespace mp {
namespace {

// Sum over ranks r of (r + 1) * value: what an allreduce of value * (rank + 1) gives.
int64_t rank_sum(int n, int64_t value) { return value * int64_t(n) * (n + 1) / 2; }

void check(Tally& tally, const char* what, int iteration, const int64_t* got, size_t count,
           int64_t want) {
  CallInfo info;
  info.coll = what;
  info.dtype = sclInt64;
  info.count = count;
  info.detail = "iteration " + std::to_string(iteration);
  std::vector<int64_t> expect(count, want);
  tally.compare(info, "recvbuff", got, expect.data(), count);
}

void issue_order(const Comm& w, Tally& tally) {
  constexpr int kPairs = 300;
  constexpr size_t kCount = 64;
  sclStream_t stream;
  MP_OK(sclStreamCreate(&stream));
  std::vector<int64_t*> bufs(2 * kPairs);
  for (int64_t*& b : bufs) MP_OK(sclMemAlloc(reinterpret_cast<void**>(&b), kCount * 8));
  for (int i = 0; i < kPairs; ++i) {
    for (int k = 0; k < 2; ++k) {
      int64_t* b = bufs[size_t(2 * i + k)];
      for (size_t e = 0; e < kCount; ++e) b[e] = (2 * i + k + 1) * int64_t(w.rank + 1);
    }
    MP_OK(sclAllReduce(bufs[size_t(2 * i)], bufs[size_t(2 * i)], kCount, sclInt64, sclSum, w.comm,
                       stream));
    MP_OK(sclAllReduce(bufs[size_t(2 * i + 1)], bufs[size_t(2 * i + 1)], kCount, sclInt64, sclSum,
                       w.comm, nullptr));
  }
  MP_OK(sclStreamSynchronize(stream));
  for (int c = 0; c < 2 * kPairs; ++c)
    check(tally, "allreduce (stream/NULL pairs)", c, bufs[size_t(c)], kCount, rank_sum(w.n, c + 1));
  for (int64_t* b : bufs) MP_OK(sclMemFree(b));
  MP_OK(sclStreamDestroy(stream));
}

void groups_across_communicators(const Comm& w, Tally& tally) {
  sclComm_t a, b;
  MP_OK(sclCommSplit(w.comm, 0, w.rank, &a, nullptr));
  MP_OK(sclCommSplit(w.comm, 0, w.rank, &b, nullptr));
  constexpr size_t kCount = 1000;  // past the eager size: every call runs the full protocol
  std::vector<int64_t> x(kCount), y(kCount), s(kCount), r(kCount);
  for (int it = 0; it < 20; ++it) {
    for (size_t e = 0; e < kCount; ++e) {
      x[e] = (it + 1) * int64_t(w.rank + 1);
      y[e] = (it + 2) * int64_t(w.rank + 1);
      s[e] = 1000 * w.rank + it;
      r[e] = -1;
    }
    const bool even = w.rank % 2 == 0;
    MP_OK(sclGroupStart());
    for (int k = 0; k < 2; ++k) {
      const bool first_a = (k == 0) == even;
      if (first_a) MP_OK(sclAllReduce(x.data(), x.data(), kCount, sclInt64, sclSum, a, nullptr));
      if (!first_a) MP_OK(sclAllReduce(y.data(), y.data(), kCount, sclInt64, sclSum, b, nullptr));
    }
    MP_OK(sclGroupEnd());
    check(tally, "group allreduce on A", it, x.data(), kCount, rank_sum(w.n, it + 1));
    check(tally, "group allreduce on B", it, y.data(), kCount, rank_sum(w.n, it + 2));
    if (w.rank > 1) continue;
    const int peer = 1 - w.rank;
    MP_OK(sclGroupStart());
    MP_OK(sclSend(s.data(), kCount, sclInt64, peer, w.rank == 0 ? a : b, nullptr));
    MP_OK(sclRecv(r.data(), kCount, sclInt64, peer, w.rank == 0 ? b : a, nullptr));
    MP_OK(sclGroupEnd());
    check(tally, "group send and recv on two communicators", it, r.data(), kCount,
          1000 * peer + it);
  }
  MP_OK(sclCommDestroy(a));
  MP_OK(sclCommDestroy(b));
}

void group_parts_by_stream(const Comm& w, Tally& tally) {
  sclStream_t s1, s2;
  MP_OK(sclStreamCreate(&s1));
  MP_OK(sclStreamCreate(&s2));
  constexpr size_t kCount = 1000;
  std::vector<int64_t> x(kCount, w.rank + 1), y(kCount, 2 * (w.rank + 1));
  if (w.rank == 1) usleep(200 * 1000);  // the others end their group long before this rank
  MP_OK(sclGroupStart());
  MP_OK(sclAllReduce(x.data(), x.data(), kCount, sclInt64, sclSum, w.comm, s1));
  MP_OK(sclAllReduce(y.data(), y.data(), kCount, sclInt64, sclSum, w.comm, s2));
  MP_OK(sclGroupEnd());
  if (w.rank != 1) {
    CallInfo info;
    info.coll = "group on two streams";
    tally.expect(sclStreamQuery(s2) == sclInProgress, info,
                 "the call queued on s2 is pending on s2 while rank 1 is late");
  }
  MP_OK(sclStreamSynchronize(s2));  // must cover the call on s2 alone
  check(tally, "group allreduce on s2, after synchronising s2", 0, y.data(), kCount,
        rank_sum(w.n, 2));
  MP_OK(sclStreamSynchronize(s1));
  check(tally, "group allreduce on s1", 0, x.data(), kCount, rank_sum(w.n, 1));
  MP_OK(sclStreamDestroy(s1));
  MP_OK(sclStreamDestroy(s2));
}

}  // namespace

int run_order(int argc, char**) {
  if (argc != 0) fatal("order: takes no arguments");
  const Comm& w = world();
  if (w.n < 2) fatal("order: needs at least 2 ranks");
  Tally& tally = global_tally();
  issue_order(w, tally);
  groups_across_communicators(w, tally);
  group_parts_by_stream(w, tally);
  return finish("order");
}

}  // namespace mp
