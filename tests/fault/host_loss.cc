// host_loss: run across hosts (stratarun --netns); the driver (host_loss.sh) kills every rank of
// one host, or takes its link down, while the ranks loop over allreduces. Each rank that still
// runs must fail its call with a remote error or a timeout within about one timeout, say so
// ("SURVIVED"), find later calls refused, and destroy the communicator without hanging.
#include <time.h>

#include <string>

#include "fault_common.h"

namespace fault {
int run_host_loss(double timeout_s) {
  sclComm_t comm = init_or_die();
  const size_t count = 64 * 1024;
  float* a;
  sclMemAlloc(reinterpret_cast<void**>(&a), count * sizeof(float));
  const double start = now_s();
  for (int it = 0; now_s() - start < 120; ++it) {
    if (it == 20) std::printf("rank %d: RUNNING\n", g_rank);
    const double t0 = now_s();
    const sclResult_t r = sclAllReduce(a, a, count, sclFloat32, sclMax, comm, nullptr);
    if (r == sclSuccess) continue;
    const double took = now_s() - t0;
    const std::string msg = sclGetLastError(comm);
    std::printf("rank %d: SURVIVED: iteration %d: %s after %.3f s: %s\n", g_rank, it,
                sclGetErrorString(r), took, msg.c_str());
    expect(r == sclRemoteError || r == sclTimeout, "error code after a host was lost",
           sclGetErrorString(r));
    expect(took < timeout_s + 1.0, "the loss is seen within the timeout", std::to_string(took));
    expect(sclAllReduce(a, a, 16, sclFloat32, sclMax, comm, nullptr) != sclSuccess,
           "later calls on the revoked communicator fail");
    const double d0 = now_s();
    expect(sclCommDestroy(comm) == sclSuccess, "destroy after the loss");
    expect(now_s() - d0 < timeout_s + 1.0, "destroy returns", std::to_string(now_s() - d0));
    return g_failures ? 1 : 0;
  }
  expect(false, "the loop ran two minutes although a host was lost");
  return 1;
}

}  // namespace fault
