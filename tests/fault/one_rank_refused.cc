// A collective refused for its arguments on one rank only (a check that only the root makes, a
// layout in place on one rank and overlapping on another, a bad dtype, op or pointer there)
// fails the same call on every rank: the refused rank with sclInvalidArgument naming the
// argument, the others with sclInvalidUsage naming that rank. Then every rank's next calls pair
// as they should, checked element by element; before, the others went ahead and paired their
// call with the refused rank's next one, and later calls returned success with another call's
// data.
#include <functional>
#include <string>
#include <vector>

#include "fault_common.h"

extern "C" sclResult_t call_allreduce_with_dtype(const void* send, void* recv, size_t count,
                                                 int dtype, sclComm_t comm);

namespace fault {
namespace {

constexpr size_t kCount = 1000;  // a normal step; kSmall an eager one
constexpr size_t kSmall = 10;

// Two calls whose results say which call each rank paired with: broadcasts from rank 0 of
// 100 + k, then an allreduce of rank + 1 (every element).
void check_in_step(sclComm_t comm, float* buf, int n, const std::string& after) {
  for (int k = 0; k < 2; ++k) {
    for (size_t i = 0; i < kCount; ++i) buf[i] = g_rank == 0 ? float(100 + k) : -1.0f;
    const sclResult_t r = sclBroadcast(buf, buf, kCount, sclFloat32, 0, comm, nullptr);
    bool right = r == sclSuccess;
    for (size_t i = 0; i < kCount && right; ++i) right = buf[i] == float(100 + k);
    expect(right, ("broadcast " + std::to_string(k) + " after " + after).c_str(),
           sclGetLastError(comm));
  }
  for (size_t i = 0; i < kCount; ++i) buf[i] = float(g_rank + 1);
  const sclResult_t r = sclAllReduce(buf, buf, kCount, sclFloat32, sclSum, comm, nullptr);
  bool right = r == sclSuccess;
  for (size_t i = 0; i < kCount && right; ++i) right = buf[i] == float(n * (n + 1) / 2);
  expect(right, ("allreduce after " + after).c_str(), sclGetLastError(comm));
}

struct Case {
  const char* what;
  int refused_rank;    // the first rank whose call is refused (with `and_above`, every one from it)
  const char* needle;  // in its own error
  std::function<sclResult_t(sclComm_t, float*, float*)> call;  // (comm, a, b), on every rank
  bool and_above = false;
};

// Between ranks 0 and 1: a send refused at its sender, a receive refused at its receiver, and a
// group of both refused on rank 0 each fail the peer's op; then a correct exchange pairs, every
// element checked.
void point_to_point(sclComm_t comm, float* a, float* b) {
  int exchanges = 0;  // each exchange's data differ, so a pairing with another shows
  const auto exchange_checks = [&](const std::string& after) {
    ++exchanges;
    const auto value = [&](int rank, size_t i) {
      return float(exchanges * 10000 + rank * 1000 + int(i % 100));
    };
    for (size_t i = 0; i < kCount; ++i) a[i] = value(g_rank, i);
    const int peer = 1 - g_rank;
    sclGroupStart();
    sclSend(a, kCount, sclFloat32, peer, comm, nullptr);
    sclRecv(b, kCount, sclFloat32, peer, comm, nullptr);
    bool right = sclGroupEnd() == sclSuccess;
    for (size_t i = 0; i < kCount && right; ++i) right = b[i] == value(peer, i);
    expect(right, ("an exchange after " + after).c_str(), sclGetLastError(comm));
  };
  if (g_rank > 1) return;
  // A send with no buffer.
  const sclResult_t sent = g_rank == 0 ? sclSend(nullptr, kCount, sclFloat32, 1, comm, nullptr)
                                       : sclRecv(b, kCount, sclFloat32, 0, comm, nullptr);
  if (g_rank == 0) {
    expect_error(sent, sclInvalidArgument, comm, "sendbuff", "a refused send");
  } else {
    expect_error(sent, sclInvalidUsage, comm, "its send was refused",
                 "a receive of a refused send");
  }
  exchange_checks("a refused send");
  // A receive into an unaligned buffer.
  float* odd = reinterpret_cast<float*>(reinterpret_cast<char*>(b) + 1);
  const sclResult_t received = g_rank == 1 ? sclRecv(odd, kCount, sclFloat32, 0, comm, nullptr)
                                           : sclSend(a, kCount, sclFloat32, 1, comm, nullptr);
  if (g_rank == 1) {
    expect_error(received, sclInvalidArgument, comm, "aligned", "a refused receive");
  } else {
    expect_error(received, sclInvalidUsage, comm, "its receive was refused",
                 "a send to a refused receive");
  }
  exchange_checks("a refused receive");
  // A group of a send and a receive, one of them refused on rank 0.
  sclGroupStart();
  sclSend(g_rank == 0 ? nullptr : a, kCount, sclFloat32, 1 - g_rank, comm, nullptr);
  sclRecv(b, kCount, sclFloat32, 1 - g_rank, comm, nullptr);
  const sclResult_t grouped = sclGroupEnd();
  if (g_rank == 0) {
    expect_error(grouped, sclInvalidArgument, nullptr, "none of the group's calls ran",
                 "a group of sends and receives with a refused send");
  } else {
    expect_error(grouped, sclInvalidUsage, comm, "refused", "a group whose peer's was refused");
  }
  exchange_checks("a refused group of sends and receives");
}

// Across hosts the refused rank cannot take part in rail operations whose shape only its peers
// know: it revokes the communicator, and every rank fails the call and the next one, none
// paired with another's.
int across_hosts(sclComm_t comm, float* a) {
  const sclResult_t r =
      sclBroadcast(a, g_rank == 0 ? a + 3 : a, kCount, sclFloat32, 0, comm, nullptr);
  if (g_rank == 0) {
    expect_error(r, sclInvalidArgument, comm, "overlap", "the root's refused broadcast");
  } else {
    expect_error(r, sclInvalidUsage, comm, "revoked the communicator",
                 "a broadcast refused at its root on another rank");
  }
  for (size_t i = 0; i < kCount; ++i) a[i] = 1.0f;
  expect(sclAllReduce(a, a, kCount, sclFloat32, sclSum, comm, nullptr) != sclSuccess,
         "the next call fails too", sclGetLastError(comm));
  sclCommDestroy(comm);
  return g_failures ? 1 : 0;
}

}  // namespace

int run_one_rank_refused(bool hosts) {
  sclComm_t comm = init_or_die();
  int n = 0;
  sclCommCount(comm, &n);
  float *a = nullptr, *b = nullptr;
  sclMemAlloc(reinterpret_cast<void**>(&a), 4 * kCount * sizeof(float) * size_t(n));
  sclMemAlloc(reinterpret_cast<void**>(&b), 4 * kCount * sizeof(float) * size_t(n));
  if (hosts) return across_hosts(comm, a);
  const int last = n - 1;
  const auto on = [](int rank, auto bad, auto good) { return g_rank == rank ? bad : good; };
  const std::vector<Case> cases = {
      {"a broadcast whose buffers overlap at the root", 0, "overlap",
       [](sclComm_t c, float* x, float*) {
         return sclBroadcast(x, x + 3, kCount, sclFloat32, 0, c, nullptr);
       }},
      {"a reduce whose output is unaligned at the root (eager size)", 0, "aligned",
       [](sclComm_t c, float* x, float* y) {
         return sclReduce(x, reinterpret_cast<char*>(y) + 1, kSmall, sclFloat32, sclSum, 0, c,
                          nullptr);
       }},
      {"a gather with no output at its root", last, "recvbuff",
       [last](sclComm_t c, float* x, float*) {
         return sclGather(x, nullptr, kCount, sclFloat32, last, c, nullptr);
       }},
      {"an allgather in place on rank 0 only", 1, "overlap",
       [](sclComm_t c, float* x, float*) {
         return sclAllGather(x, x, kSmall, sclFloat32, c, nullptr);
       },
       true},
      {"an allreduce with a bad dtype on one rank", last, "datatype",
       [&](sclComm_t c, float* x, float* y) {
         return call_allreduce_with_dtype(x, y, kCount, on(last, 99, int(sclFloat32)), c);
       }},
      {"an alltoallv with no send counts on one rank", last, "sendcounts",
       [&, n](sclComm_t c, float* x, float* y) {
         static std::vector<size_t> counts, displs;
         counts.assign(size_t(n), kSmall);
         displs.assign(size_t(n), 0);
         for (int p = 0; p < n; ++p) displs[size_t(p)] = size_t(p) * kSmall;
         return sclAlltoAllv(x, on(last, nullptr, counts.data()), displs.data(), y, counts.data(),
                             displs.data(), sclFloat32, c, nullptr);
       }},
      {"an alltoall with no input on one rank", last, "sendbuff",
       [&](sclComm_t c, float* x, float* y) {
         return sclAlltoAll(on(last, nullptr, x), y, kSmall, sclFloat32, c, nullptr);
       }},
  };
  for (const Case& k : cases) {
    if (k.refused_rank >= n || (n == 1 && k.refused_rank != 0)) continue;
    const sclResult_t r = k.call(comm, a, b);
    if (g_rank == k.refused_rank || (k.and_above && g_rank > k.refused_rank)) {
      expect_error(r, sclInvalidArgument, comm, k.needle, k.what);
    } else {
      const std::string culprit = "rank " + std::to_string(k.refused_rank) + " could not take part";
      expect_error(r, sclInvalidUsage, comm, culprit.c_str(), k.what);
    }
    check_in_step(comm, a, n, k.what);
  }

  // On a stream: the refusal takes its turn there, between the calls queued around it.
  sclStream_t s = nullptr;
  sclStreamCreate(&s);
  for (size_t i = 0; i < kCount; ++i) b[i] = float(g_rank + 1);
  expect(sclAllReduce(b, b, kCount, sclFloat32, sclSum, comm, s) == sclSuccess, "queued first");
  const sclResult_t queued =
      sclBroadcast(a, g_rank == 0 ? a + 3 : a, kCount, sclFloat32, 0, comm, s);
  expect(queued == (g_rank == 0 ? sclInvalidArgument : sclSuccess), "the refusal on a stream");
  // A refused alltoallv queued too (it carries none of its arrays); the peers' fails in the
  // same turn, which leaves the stream's first error the broadcast's.
  std::vector<size_t> ones(size_t(n), 1), displs(size_t(n), 0);
  for (int p = 0; p < n; ++p) displs[size_t(p)] = size_t(p);
  const sclResult_t queued_v =
      sclAlltoAllv(a, g_rank == 0 ? nullptr : ones.data(), displs.data(), b + kCount, ones.data(),
                   displs.data(), sclFloat32, comm, s);
  expect(queued_v == (g_rank == 0 ? sclInvalidArgument : sclSuccess), "a refused alltoallv");
  const sclResult_t synced = sclStreamSynchronize(s);
  bool summed = true;
  for (size_t i = 0; i < kCount; ++i) summed = summed && b[i] == float(n * (n + 1) / 2);
  expect(summed, "the call queued before the refusal");
  expect(synced == (g_rank == 0 || n == 1 ? sclSuccess : sclInvalidUsage),
         "the peers' queued broadcast fails, the refused rank's stream has no error",
         sclGetLastError(comm));
  sclStreamDestroy(s);
  // A mismatch on a stream is the stream's to report; the communicator goes on, so it is no
  // asynchronous error (which, as NCCL's, tells a watchdog to abort).
  sclResult_t async = sclInternalError;
  sclCommGetAsyncError(comm, &async);
  expect(async == sclSuccess, "no asynchronous error after a recoverable one on a stream",
         sclGetErrorString(async));
  check_in_step(comm, a, n, "a refusal on a stream");

  // In a group: the group runs none of its calls on the refused rank, and its share takes the
  // first call's turn, refused; the peers fail that call and skip the rest of theirs.
  sclGroupStart();
  sclAllReduce(b, b, kCount, sclFloat32, sclSum, comm, nullptr);
  sclBroadcast(a, g_rank == 0 ? a + 3 : a, kCount, sclFloat32, 0, comm, nullptr);
  const sclResult_t grouped = sclGroupEnd();
  if (g_rank == 0) {
    expect_error(grouped, sclInvalidArgument, nullptr, "none of the group's calls ran",
                 "a group with a refused call");
  } else {
    expect_error(grouped, sclInvalidUsage, comm, "rank 0 could not take part",
                 "a group whose call was refused on rank 0");
  }
  check_in_step(comm, a, n, "a refusal in a group");
  // A group whose first call, refused, is an alltoallv: its share still takes the turn.
  sclGroupStart();
  sclAlltoAllv(a, g_rank == 0 ? nullptr : ones.data(), displs.data(), b + kCount, ones.data(),
               displs.data(), sclFloat32, comm, nullptr);
  sclAllReduce(b, b, kCount, sclFloat32, sclSum, comm, nullptr);
  const sclResult_t grouped_v = sclGroupEnd();
  if (g_rank == 0) {
    expect_error(grouped_v, sclInvalidArgument, nullptr, "sendcounts",
                 "a group whose refused first call is an alltoallv");
  } else {
    expect_error(grouped_v, sclInvalidUsage, comm, "rank 0 could not take part",
                 "a group whose alltoallv was refused on rank 0");
  }
  check_in_step(comm, a, n, "a refused alltoallv in a group");

  if (n >= 2) point_to_point(comm, a, b);
  check_in_step(comm, a, n, "refused sends and receives");

  sclMemFree(a);
  sclMemFree(b);
  sclCommDestroy(comm);
  return g_failures ? 1 : 0;
}

}  // namespace fault
