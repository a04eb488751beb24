// host_loss: run across hosts (stratarun --netns); the driver (host_loss.sh) kills every rank of
// one host, or takes its link down, while the ranks loop over allreduces. Each rank that still
// runs must fail its call with sclRemoteError soon after the loss time (the heartbeat's, far
// below the call timeout: a cut link says nothing, so only the heartbeat can tell), naming a
// rank of the other host or the local rank that gave up first; say so ("SURVIVED"); find later
// calls refused; and destroy the communicator without hanging. With `abort`, nobody is killed:
// rank 3 (host 1) calls sclCommAbort mid-loop, and every other rank must fail within a fraction of
// the loss time, told by the heartbeat (across hosts) or its host's peer.
//
// host_stall: the driver stops every rank of every host (SIGSTOP) for longer than the loss time
// and then resumes them, as a paused VM or a debugger would. Nobody was lost: each heartbeat
// thread must take the silence it wakes up to for its own stall, not its peers' death, so every
// call succeeds; and the loop must have seen the stall (a gap of twice the loss time).
#include <time.h>

#include <algorithm>
#include <string>

#include "fault_common.h"

namespace fault {
int run_host_loss(double lost_s, bool abort_one) {
  sclComm_t comm = init_or_die();
  const size_t count = 64 * 1024;
  float* a;
  sclMemAlloc(reinterpret_cast<void**>(&a), count * sizeof(float));
  const double start = now_s();
  for (int it = 0; now_s() - start < 120; ++it) {
    if (it == 20) std::printf("rank %d: RUNNING\n", g_rank);
    if (abort_one && g_rank == 3 && it == 60) {
      expect(sclCommAbort(comm) == sclSuccess, "abort");  // it frees the communicator too
      std::printf("rank %d: ABORTED\n", g_rank);
      return g_failures ? 1 : 0;
    }
    const double t0 = now_s();
    const sclResult_t r = sclAllReduce(a, a, count, sclFloat32, sclMax, comm, nullptr);
    if (r == sclSuccess) continue;
    const double took = now_s() - t0;
    const std::string msg = sclGetLastError(comm);
    std::printf("rank %d: SURVIVED: iteration %d: %s after %.3f s: %s\n", g_rank, it,
                sclGetErrorString(r), took, msg.c_str());
    expect(r == sclRemoteError, "error code after a host was lost", sclGetErrorString(r));
    if (abort_one) {
      expect(took < lost_s / 2, "the abort is seen at once", std::to_string(took));
      expect(
          msg.find("sclCommAbort") != std::string::npos || msg.find("revoked") != std::string::npos,
          "the error names the abort, or the local rank that gave up", msg);
    } else {
      expect(took < lost_s + 2.0, "the loss is seen soon after the loss time",
             std::to_string(took));
      expect(msg.find("(host ") != std::string::npos || msg.find("revoked") != std::string::npos,
             "the error names a rank of the other host, or the local rank that gave up", msg);
    }
    expect(sclAllReduce(a, a, 16, sclFloat32, sclMax, comm, nullptr) != sclSuccess,
           "later calls on the revoked communicator fail");
    const double d0 = now_s();
    expect(sclCommDestroy(comm) == sclSuccess, "destroy after the loss");
    expect(now_s() - d0 < lost_s + 2.0, "destroy returns", std::to_string(now_s() - d0));
    return g_failures ? 1 : 0;
  }
  expect(false, "the loop ran two minutes although a host was lost");
  return 1;
}

int run_host_stall(double lost_s) {
  sclComm_t comm = init_or_die();
  const size_t count = 64 * 1024;
  float* a;
  sclMemAlloc(reinterpret_cast<void**>(&a), count * sizeof(float));
  const double start = now_s();
  double last = start, widest = 0;
  int it = 0;
  for (bool more = true; more; ++it) {
    if (it == 20) std::printf("rank %d: RUNNING\n", g_rank);
    // Element 0 carries "go on" (max: while any rank wants to), so every rank stops together.
    a[0] = now_s() - start < 8 * lost_s ? 1.0f : 0.0f;
    const sclResult_t r = sclAllReduce(a, a, count, sclFloat32, sclMax, comm, nullptr);
    if (r != sclSuccess) {
      expect(false, "every call succeeds across a stall of the whole job", sclGetLastError(comm));
      break;
    }
    more = a[0] > 0;
    widest = std::max(widest, now_s() - last);
    last = now_s();
  }
  expect(widest >= 2 * lost_s, "the loop saw the stall", std::to_string(widest) + " s");
  expect(sclCommDestroy(comm) == sclSuccess, "destroy after the stall");
  if (!g_failures)
    std::printf("rank %d: STEADY: %d calls, widest gap %.2f s\n", g_rank, it, widest);
  return g_failures ? 1 : 0;
}

}  // namespace fault
