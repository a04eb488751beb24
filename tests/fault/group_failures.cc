// A call that fails inside a group: the group fails on every rank, its later calls are skipped
// everywhere (they never ran anywhere), the next call succeeds at once, and destroy is immediate.
// The same for a group queued on a stream, and for one aborted from another thread while queued.
// The call timeout is 3 s, so a skipped call left waiting shows as seconds.
#include <chrono>
#include <string>
#include <thread>

#include "fault_common.h"

namespace fault {
namespace {

// A mismatched allreduce (rank 1 has twice the count) followed by a matched one, in one group on
// `stream`; returns what the group reported (sclGroupEnd, or the stream's synchronisation).
sclResult_t mismatched_group(sclComm_t comm, float* a, float* b, sclStream_t stream) {
  sclGroupStart();
  sclAllReduce(a, b, g_rank == 1 ? 16 : 8, sclFloat32, sclSum, comm, stream);
  sclAllReduce(a, b, 8, sclFloat32, sclSum, comm, stream);
  const sclResult_t r = sclGroupEnd();
  return stream ? sclStreamSynchronize(stream) : r;
}

// The next plain call must succeed, with the right sum, long before the call timeout.
void next_call_succeeds(sclComm_t comm, float* a, int n, const char* what) {
  for (int i = 0; i < 8; ++i) a[i] = float(g_rank + 1);
  const double t0 = now_s();
  const sclResult_t r = sclAllReduce(a, a, 8, sclFloat32, sclSum, comm, nullptr);
  const double took = now_s() - t0;
  bool right = r == sclSuccess;
  for (int i = 0; i < 8; ++i) right = right && a[i] == float(n * (n + 1) / 2);
  expect(right, what, std::string(sclGetErrorString(r)) + ": " + sclGetLastError(comm));
  expect(took < 2.0, what, "took " + std::to_string(took) + " s");
}

}  // namespace

int run_group_failures() {
  sclComm_t comm = init_or_die();
  int n = 0;
  sclCommCount(comm, &n);
  float *a, *b;
  sclMemAlloc(reinterpret_cast<void**>(&a), 64 * sizeof(float));
  sclMemAlloc(reinterpret_cast<void**>(&b), 64 * sizeof(float));
  sclStream_t stream = nullptr;
  expect(sclStreamCreate(&stream) == sclSuccess, "stream");

  sclResult_t r = mismatched_group(comm, a, b, nullptr);
  expect_error(r, sclInvalidUsage, comm, "count=16", "a mismatch inside a group");
  next_call_succeeds(comm, a, n, "the call after a failed group");
  r = mismatched_group(comm, a, b, stream);
  expect(r == sclInvalidUsage, "a mismatch inside a group on a stream", sclGetErrorString(r));
  next_call_succeeds(comm, a, n, "the call after a failed group on a stream");
  // The stream reported the error once: its next call and synchronisation succeed.
  r = sclAllReduce(a, b, 8, sclFloat32, sclSum, comm, stream);
  const sclResult_t synced = sclStreamSynchronize(stream);
  expect(r == sclSuccess && synced == sclSuccess, "the stream goes on after a reported error",
         sclGetErrorString(synced));

  // Rank 0 queues a group that cannot finish (rank 1 never joins it) and aborts from this thread
  // while the stream's thread waits in its first call: the abort (which ends the communicator,
  // as ncclCommAbort does) must not wait for the group's second call. Rank 1 destroys.
  double t0 = 0;
  if (g_rank == 0) {
    sclGroupStart();
    sclAllReduce(a, b, 8, sclFloat32, sclSum, comm, stream);
    sclAllReduce(a, b, 8, sclFloat32, sclSum, comm, stream);
    sclGroupEnd();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    t0 = now_s();
    expect(sclCommAbort(comm) == sclSuccess, "abort");
    r = sclStreamSynchronize(stream);
    expect(r == sclRemoteError, "an aborted group on a stream fails", sclGetErrorString(r));
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    t0 = now_s();
    expect(sclCommDestroy(comm) == sclSuccess, "destroy");
  }
  const double took = now_s() - t0;
  expect(took < 2.0, "ending the communicator with an aborted group queued is immediate",
         std::to_string(took) + " s");
  sclStreamDestroy(stream);
  sclMemFree(a);
  sclMemFree(b);
  std::printf("rank %d: group_failures: %d failures\n", g_rank, g_failures);
  return g_failures ? 1 : 0;
}

}  // namespace fault
