// sclCommAbort from another thread while a call is blocked (NCCL's watchdog pattern), over many
// communicators: the blocked call returns an error within 100 ms of the abort, calls queued on a
// stream fail instead of running on a freed communicator, and nothing is used after it is freed
// (the case runs under ASan and TSan too).
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "fault_common.h"

namespace fault {
int run_abort_blocked(int iterations) {
  double worst_ms = 0;
  for (int it = 0; it < iterations; ++it) {
    sclComm_t comm = init_or_die();
    float* buf;
    sclMemAlloc(reinterpret_cast<void**>(&buf), 1024 * sizeof(float));
    if (g_rank != 0) {
      // Never joins rank 0's calls; leaves once rank 0 has aborted (the departure barrier waits
      // for it).
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      expect(sclCommDestroy(comm) == sclSuccess, "destroy after the peer aborted");
      sclMemFree(buf);
      continue;
    }
    std::atomic<double> returned_at{0};
    sclResult_t blocked_result = sclSuccess;
    std::thread blocked([&] {
      blocked_result = sclAllReduce(buf, buf, 1024, sclFloat32, sclSum, comm, nullptr);
      returned_at = now_s();
    });
    sclStream_t stream;
    sclStreamCreate(&stream);
    // The call is blocked by now; aborts land at every phase of its sleep slices.
    std::this_thread::sleep_for(std::chrono::microseconds(20000 + 731 * it));
    for (int k = 0; k < 3; ++k) sclAllReduce(buf, buf, 1024, sclFloat32, sclSum, comm, stream);
    const double aborted_at = now_s();
    expect(sclCommAbort(comm) == sclSuccess, "abort from another thread");
    blocked.join();
    const double latency_ms = (returned_at - aborted_at) * 1e3;
    worst_ms = std::max(worst_ms, latency_ms);
    expect(blocked_result != sclSuccess, "the blocked call fails",
           sclGetErrorString(blocked_result));
    expect(latency_ms < 100, "the blocked call returns within 100 ms of the abort",
           std::to_string(latency_ms) + " ms");
    expect(sclStreamSynchronize(stream) != sclSuccess, "queued stream calls fail");
    sclStreamDestroy(stream);
    expect(sclAllReduce(buf, buf, 16, sclFloat32, sclSum, comm, nullptr) == sclInvalidArgument,
           "the aborted handle is no longer live");
    sclMemFree(buf);
  }
  if (g_rank == 0) {
    std::printf(
        "rank 0: abort_blocked: %d communicators aborted under a blocked call; slowest "
        "return %.1f ms after the abort: %s\n",
        iterations, worst_ms, g_failures ? "FAILED" : "OK");
  }
  return g_failures ? 1 : 0;
}

}  // namespace fault
