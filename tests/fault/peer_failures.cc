// Peers that die, never arrive, or abort: survivors get an error that names the rank, within
// the configured timeout, instead of hanging.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "fault_common.h"

namespace fault {
namespace {

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

}  // namespace

int run_kill_survivor(int victim, int iterations) {
  sclComm_t comm = init_or_die();
  float* a;
  sclMemAlloc(reinterpret_cast<void**>(&a), 4096 * sizeof(float));
  for (int it = 0; it < iterations; ++it) {
    if (g_rank == victim && it == iterations / 2) raise(SIGKILL);  // dies mid-loop, no cleanup
    const double t0 = now_s();
    sclResult_t r = sclAllReduce(a, a, 4096, sclFloat32, sclMax, comm, nullptr);
    if (r != sclSuccess) {
      const std::string msg = sclGetLastError(comm);
      const std::string want = "rank " + std::to_string(victim);
      std::printf("rank %d: SURVIVED: iteration %d: %s after %.3f s: %s\n", g_rank, it,
                  sclGetErrorString(r), now_s() - t0, msg.c_str());
      expect(r == sclRemoteError, "error code after a peer died", sclGetErrorString(r));
      expect(msg.find(want) != std::string::npos, "error names the dead rank", msg);
      // Later calls fail the same way: the communicator is revoked.
      expect(sclAllReduce(a, a, 16, sclFloat32, sclMax, comm, nullptr) == sclRemoteError,
             "later call on the revoked communicator");
      sclCommDestroy(comm);
      return g_failures ? 1 : 0;
    }
  }
  expect(false, "the loop finished although a rank died");
  return 1;
}

int run_peer_never_arrives() {
  sclComm_t comm = init_or_die();  // run with STRATACL_TIMEOUT_MS small
  float* a;
  sclMemAlloc(reinterpret_cast<void**>(&a), 256 * sizeof(float));
  const int late = 1;
  if (g_rank == late) {
    // Never calls the collective; waits until the others have given up, then leaves.
    std::this_thread::sleep_for(std::chrono::seconds(4));
    sclCommDestroy(comm);
    return 0;
  }
  const double t0 = now_s();
  sclResult_t r = sclAllReduce(a, a, 256, sclFloat32, sclSum, comm, nullptr);
  const double took = now_s() - t0;
  std::printf("rank %d: %s after %.3f s: %s\n", g_rank, sclGetErrorString(r), took,
              sclGetLastError(comm));
  // The ranks that waited for the late rank time out; a rank that instead saw another
  // survivor's revocation reports that (a remote error), also promptly.
  expect(r == sclTimeout || r == sclRemoteError, "timeout when a peer never arrives",
         sclGetErrorString(r));
  expect(took < 3.0, "gave up within the timeout", std::to_string(took));
  sclCommDestroy(comm);
  return g_failures ? 1 : 0;
}

int run_abort() {
  sclComm_t comm = init_or_die();
  float* a;
  sclMemAlloc(reinterpret_cast<void**>(&a), 256 * sizeof(float));
  if (g_rank == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the others are waiting
    expect(sclCommAbort(comm) == sclSuccess, "abort");
    return g_failures ? 1 : 0;
  }
  const double t0 = now_s();
  sclResult_t r = sclAllReduce(a, a, 256, sclFloat32, sclSum, comm, nullptr);
  const double took = now_s() - t0;
  std::printf("rank %d: %s after %.3f s: %s\n", g_rank, sclGetErrorString(r), took,
              sclGetLastError(comm));
  expect(r == sclRemoteError, "remote error after a peer aborted", sclGetErrorString(r));
  expect(took < 0.3 + 0.5, "noticed the abort promptly", std::to_string(took));
  expect(sclCommDestroy(comm) == sclSuccess, "destroy after abort");
  return g_failures ? 1 : 0;
}

}  // namespace fault
