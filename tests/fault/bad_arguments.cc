// Every bad argument gives sclInvalidArgument naming the argument, with no side effect: after
// each one, a correct collective on the same communicator still lines up across ranks.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "fault_common.h"

extern "C" {
sclResult_t call_allreduce_with_dtype(const void* send, void* recv, size_t count, int dtype,
                                      sclComm_t comm);
sclResult_t call_allreduce_with_op(const void* send, void* recv, size_t count, int op,
                                   sclComm_t comm);
}

namespace fault {

int run_bad_arguments() {
  // Refused before it takes the launch's communicator: the next call still gets it.
  expect_error(sclCommInitFromEnv(nullptr), sclInvalidArgument, nullptr, "comm",
               "null init-from-env output");
  sclComm_t comm = init_or_die();
  int n = 0;
  sclCommCount(comm, &n);
  float *a = nullptr, *b = nullptr;
  sclMemAlloc(reinterpret_cast<void**>(&a), 1024 * sizeof(float));
  sclMemAlloc(reinterpret_cast<void**>(&b), 1024 * sizeof(float) * size_t(n));
  const sclResult_t kArg = sclInvalidArgument;

  expect_error(sclAllReduce(a, b, 8, sclFloat32, sclSum, nullptr, nullptr), kArg, nullptr, "comm",
               "null comm");
  sclComm_t dead = nullptr;
  sclCommSplit(comm, 0, 0, &dead, nullptr);
  sclCommDestroy(dead);
  expect_error(sclAllReduce(a, b, 8, sclFloat32, sclSum, dead, nullptr), kArg, nullptr, "comm",
               "destroyed comm");
  expect_error(sclAllReduce(nullptr, b, 8, sclFloat32, sclSum, comm, nullptr), kArg, comm,
               "sendbuff", "null send");
  expect_error(sclAllReduce(a, nullptr, 8, sclFloat32, sclSum, comm, nullptr), kArg, comm,
               "recvbuff", "null recv");
  expect_error(call_allreduce_with_dtype(a, b, 8, 99, comm), kArg, comm, "datatype", "bad dtype");
  expect_error(call_allreduce_with_dtype(a, b, 8, -1, comm), kArg, comm, "datatype",
               "negative dtype");
  expect_error(call_allreduce_with_op(a, b, 8, -1, comm), kArg, comm, "op", "bad op");
  expect_error(call_allreduce_with_op(a, b, 8, sclNumOps, comm), kArg, comm, "op",
               "op past the end");
  expect_error(sclAllReduce(a, b, SIZE_MAX / 2, sclFloat32, sclSum, comm, nullptr), kArg, comm,
               "count", "overflowing count");
  expect_error(sclAllGather(a, b, SIZE_MAX / 4, sclFloat64, comm, nullptr), kArg, comm, "sendcount",
               "overflowing allgather");
  expect_error(sclBroadcast(a, b, 8, sclFloat32, n, comm, nullptr), kArg, comm, "root",
               "root too large");
  expect_error(sclReduce(a, b, 8, sclFloat32, sclSum, -1, comm, nullptr), kArg, comm, "root",
               "negative root");
  expect_error(sclSend(a, 8, sclFloat32, n + 3, comm, nullptr), kArg, comm, "peer",
               "peer out of range");
  expect_error(sclRecv(a, 8, sclFloat32, -2, comm, nullptr), kArg, comm, "peer", "negative peer");
  const float* odd = reinterpret_cast<const float*>(reinterpret_cast<char*>(a) + 1);
  expect_error(sclAllReduce(odd, b, 8, sclFloat32, sclSum, comm, nullptr), kArg, comm, "aligned",
               "unaligned send");
  expect_error(sclAllReduce(a, a + 1, 8, sclFloat32, sclSum, comm, nullptr), kArg, comm, "overlap",
               "partial overlap");
  expect_error(sclAllReduce(a, b, 1025, sclFloat32, sclSum, comm, nullptr), kArg, comm,
               "past the end", "past heap block");
  expect_error(sclAlltoAll(b, b, 8, sclFloat32, comm, nullptr), kArg, comm, "overlap",
               "in-place alltoall");
  std::vector<size_t> counts(size_t(n), 1), displs(size_t(n), 0);
  expect_error(sclAlltoAllv(a, nullptr, displs.data(), b, counts.data(), displs.data(), sclFloat32,
                            comm, nullptr),
               kArg, comm, "sendcounts", "null alltoallv array");
  expect_error(sclMemFree(reinterpret_cast<char*>(a) + 64), kArg, nullptr, "sclMemFree",
               "interior free");
  int local = 0;
  expect_error(sclMemFree(&local), kArg, nullptr, "sclMemFree", "free of a stack pointer");
  expect_error(sclStreamSynchronize(reinterpret_cast<sclStream_t>(&local)), kArg, nullptr, "stream",
               "bogus stream");
  expect_error(sclCommInitRank(nullptr, 2, sclUniqueId{}, 0), kArg, nullptr, "comm",
               "null init output");
  sclComm_t c2 = nullptr;
  expect_error(sclCommInitRank(&c2, 2, sclUniqueId{}, 0), kArg, nullptr, "commId",
               "garbage unique id");
  expect_error(sclCommInitRank(&c2, 2, sclUniqueId{}, 5), kArg, nullptr, "rank",
               "init rank out of range");
  sclConfig_t raw{};
  sclUniqueId id{};
  sclGetUniqueId(&id);
  expect_error(sclCommInitRankConfig(&c2, 1, id, 0, &raw), kArg, nullptr, "config",
               "uninitialised config");
  void* p = nullptr;
  expect_error(sclMemAlloc(&p, 0), kArg, nullptr, "size", "zero-byte alloc");
  // A freed block stays refused once the library's own blocks (a child's control block and
  // staging area) may have taken its place in the heap.
  void* gone = nullptr;
  sclMemAlloc(&gone, 4096);
  sclMemFree(gone);
  sclComm_t child = nullptr;
  expect(sclCommSplit(comm, 0, g_rank, &child, nullptr) == sclSuccess, "split");
  expect_error(sclMemFree(gone), kArg, nullptr, "double free", "free of a freed block");
  expect_error(sclAllReduce(a, gone, 8, sclFloat32, sclSum, comm, nullptr), kArg, comm, "recvbuff",
               "a freed block as recvbuff");
  sclCommDestroy(child);

  // A callback must not wait for its own stream: refused, where it would wait for itself.
  {
    struct Waits {
      sclResult_t sync = sclSuccess, destroy = sclSuccess;
    } waits;
    sclStream_t s = nullptr;
    sclStreamCreate(&s);
    sclStreamAddCallback(
        s,
        [](sclStream_t own, sclResult_t, void* arg) {
          auto* w = static_cast<Waits*>(arg);
          w->sync = sclStreamSynchronize(own);
          w->destroy = sclStreamDestroy(own);
        },
        &waits);
    expect(sclStreamSynchronize(s) == sclSuccess, "synchronize after the callback");
    expect(waits.sync == sclInvalidUsage && waits.destroy == sclInvalidUsage,
           "a callback's wait on its own stream refused");
    sclStreamDestroy(s);
  }

  // Nor may a callback's call wait for calls of its communicator queued behind the callback on
  // its own stream, which cannot begin before the callback returns: every kind of call that
  // waits its turn is refused at once (the deadline is 20 s here), and the calls behind it run.
  {
    struct Inside {
      sclComm_t comm = nullptr;
      float* buf = nullptr;
      std::atomic<bool> open{false};
      std::vector<sclResult_t> results;
      std::vector<std::string> messages;
      double took_s = 0;
    } in;
    in.comm = comm;
    in.buf = a;
    sclStream_t s = nullptr;
    sclStreamCreate(&s);
    // The gate keeps the callback below from running before the call behind it is queued.
    sclStreamAddCallback(
        s,
        [](sclStream_t, sclResult_t, void* arg) {
          while (!static_cast<Inside*>(arg)->open.load())
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        },
        &in);
    sclStreamAddCallback(
        s,
        [](sclStream_t, sclResult_t, void* arg) {
          auto* i = static_cast<Inside*>(arg);
          const auto t0 = std::chrono::steady_clock::now();
          sclComm_t child = nullptr;
          const sclResult_t rs[] = {
              sclAllReduce(i->buf, i->buf, 8, sclFloat32, sclSum, i->comm, nullptr),
              sclBarrier(i->comm, nullptr), sclCommSplit(i->comm, 0, 0, &child, nullptr),
              sclCommFinalize(i->comm), sclCommDestroy(i->comm)};
          for (sclResult_t r : rs) {
            i->results.push_back(r);
            i->messages.push_back(sclGetLastError(i->comm));
          }
          i->took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        },
        &in);
    std::vector<float> behind(8, float(g_rank + 1));
    float* x = b;
    for (int k = 0; k < 8; ++k) x[k] = behind[size_t(k)];
    expect(sclAllReduce(x, x, 8, sclFloat32, sclSum, comm, s) == sclSuccess,
           "queue the call behind");
    in.open = true;
    expect(sclStreamSynchronize(s) == sclSuccess, "the call behind the callback runs");
    for (size_t k = 0; k < in.results.size(); ++k) {
      expect(
          in.results[k] == sclInvalidUsage && in.messages[k].find("callback") != std::string::npos,
          "a callback's call waiting behind itself refused",
          "call " + std::to_string(k) + ": " + in.messages[k]);
    }
    expect(in.results.size() == 5 && in.took_s < 5, "refused at once, not at the deadline");
    for (int k = 0; k < 8; ++k) {
      expect(x[k] == float(n * (n + 1) / 2), "the sum of the call behind the callback");
    }
    sclResult_t async = sclInternalError;
    sclCommGetAsyncError(comm, &async);
    expect(async == sclSuccess, "no asynchronous error after the refusals");
    sclStreamDestroy(s);
  }

  // NCCL's pattern for a peer that never comes: poll a non-blocking init, then abort it. The
  // abort returns at once, the init left to time out in the background.
  {
    sclUniqueId lone;
    sclGetUniqueId(&lone);
    sclConfig_t cfg = SCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    sclComm_t waiting = nullptr;
    expect(sclCommInitRankConfig(&waiting, 2, lone, 0, &cfg) == sclInProgress,
           "non-blocking init of 2 ranks, the other never started");
    sclResult_t state = sclSuccess;
    sclCommGetAsyncError(waiting, &state);
    expect(state == sclInProgress, "its init still waits");
    const auto t0 = std::chrono::steady_clock::now();
    expect(sclCommAbort(waiting) == sclSuccess, "abort of the waiting init");
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    expect(took < 2.0, "the abort returned at once", std::to_string(took) + " s");
    expect(sclCommGetAsyncError(waiting, &state) == sclInvalidArgument, "the handle is gone");
  }

  // No side effect: the sequence is intact, so a real allreduce still agrees everywhere.
  for (int i = 0; i < 1024; ++i) a[i] = float(g_rank + 1);
  sclResult_t r = sclAllReduce(a, a, 1024, sclFloat32, sclSum, comm, nullptr);
  expect(r == sclSuccess, "allreduce after bad arguments", sclGetLastError(comm));
  for (int i = 0; i < 1024 && r == sclSuccess; ++i) {
    if (a[i] != float(n * (n + 1) / 2)) {
      expect(false, "allreduce value after bad arguments");
      break;
    }
  }
  expect(sclMemFree(a) == sclSuccess, "free a");
  expect_error(sclMemFree(a), kArg, nullptr, "double free", "double free");
  sclMemFree(b);
  expect(sclCommDestroy(comm) == sclSuccess, "destroy");
  std::printf("rank %d: bad_arguments: %d failures\n", g_rank, g_failures);
  return g_failures ? 1 : 0;
}

}  // namespace fault
