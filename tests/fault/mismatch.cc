// Mismatched calls across ranks become sclInvalidUsage on every rank, with a message showing
// both sides, and the communicator stays usable.
#include <string>
#include <vector>

#include "fault_common.h"

namespace fault {
namespace {

void check_recovers(sclComm_t comm, float* a, int n) {
  for (int i = 0; i < 64; ++i) a[i] = 1.0f;
  sclResult_t r = sclAllReduce(a, a, 64, sclFloat32, sclSum, comm, nullptr);
  expect(r == sclSuccess && a[63] == float(n), "allreduce after a mismatch", sclGetLastError(comm));
}

}  // namespace

int run_mismatch() {
  sclComm_t comm = init_or_die();
  int n = 0;
  sclCommCount(comm, &n);
  float *a, *b;
  sclMemAlloc(reinterpret_cast<void**>(&a), 4096 * sizeof(float) * size_t(n));
  sclMemAlloc(reinterpret_cast<void**>(&b), 4096 * sizeof(float) * size_t(n));
  const bool odd = g_rank == n - 1;  // the rank that calls something different

  // Every message shows both calls; the needles are the odd rank's values, which every rank's
  // message contains (its own side on the odd rank, the peer's side on the others).
  // Counts within one kind of step: both eager (100 and 120 floats), both normal (1000, 2000).
  sclResult_t r = sclAllReduce(a, b, odd ? 120 : 100, sclFloat32, sclSum, comm, nullptr);
  if (n > 1) expect_error(r, sclInvalidUsage, comm, "count=120", "mismatched count (eager)");
  check_recovers(comm, a, n);
  r = sclAllReduce(a, b, odd ? 2000 : 1000, sclFloat32, sclSum, comm, nullptr);
  if (n > 1) expect_error(r, sclInvalidUsage, comm, "count=2000", "mismatched count (normal)");
  check_recovers(comm, a, n);
  const std::string odd_dtype = "dtype=" + std::to_string(int(sclInt32));
  r = sclAllReduce(a, b, 64, odd ? sclInt32 : sclFloat32, sclSum, comm, nullptr);
  if (n > 1) expect_error(r, sclInvalidUsage, comm, odd_dtype.c_str(), "mismatched dtype");
  check_recovers(comm, a, n);
  const std::string odd_op = "op=" + std::to_string(int(sclMax));
  r = sclAllReduce(a, b, 64, sclFloat32, odd ? sclMax : sclSum, comm, nullptr);
  if (n > 1) expect_error(r, sclInvalidUsage, comm, odd_op.c_str(), "mismatched op");
  check_recovers(comm, a, n);
  // A pre-multiplied sum (sclRedOpCreatePreMulSum) runs as a sum of scaled inputs, but is
  // signed as its own op: against a plain sum, a mismatch, not a silent mix of the two.
  sclRedOp_t premul;
  float one = 1.0f;
  sclRedOpCreatePreMulSum(&premul, &one, sclFloat32, sclScalarHostImmediate, comm);
  const std::string premul_op = "op=" + std::to_string(int(sclNumOps));
  for (size_t count : {size_t(64), size_t(4000)}) {  // eager and normal steps
    r = sclAllReduce(a, b, count, sclFloat32, odd ? premul : sclSum, comm, nullptr);
    if (n > 1) expect_error(r, sclInvalidUsage, comm, premul_op.c_str(), "premulsum against sum");
    check_recovers(comm, a, n);
  }
  sclRedOpDestroy(premul, comm);
  // A split refused on one rank for its arguments (a negative colour) still takes part in the
  // split's step: the others fail with it at once, not at their deadline.
  sclComm_t child = nullptr;
  r = sclCommSplit(comm, odd ? -5 : 0, g_rank, &child, nullptr);
  if (odd) {
    expect_error(r, sclInvalidArgument, comm, "color", "a bad colour on one rank");
  } else {
    expect_error(r, sclInvalidUsage, comm, "could not prepare", "another rank's bad colour");
  }
  check_recovers(comm, a, n);
  // A config refused on every rank, inside the split's step: each names its own argument, not
  // the first peer's failure.
  sclConfig_t bad_config = SCL_CONFIG_INITIALIZER;
  bad_config.timeoutMs = -5;
  r = sclCommSplit(comm, 0, g_rank, &child, &bad_config);
  expect_error(r, sclInvalidArgument, comm, "timeoutMs", "a bad config on every rank");
  check_recovers(comm, a, n);
  r = sclBroadcast(a, b, 64, sclFloat32, odd ? 1 % n : 0, comm, nullptr);
  if (n > 1) expect_error(r, sclInvalidUsage, comm, "root=1", "mismatched root");
  check_recovers(comm, a, n);
  r = odd ? sclAllGather(a, b, 64, sclFloat32, comm, nullptr)
          : sclAllReduce(a, b, 64, sclFloat32, sclSum, comm, nullptr);
  if (n > 1) expect_error(r, sclInvalidUsage, comm, "allgather", "mismatched collective");
  check_recovers(comm, a, n);
  // One rank small enough for an eager step, the others not: the two kinds of step meet, and
  // each side still names the other's call (read from its slot or its descriptor).
  r = sclAllReduce(a, b, odd ? 64 : 4000, sclFloat32, sclSum, comm, nullptr);
  if (n > 1) {
    expect_error(r, sclInvalidUsage, comm, odd ? "count=4000" : "count=64",
                 "eager against normal step");
  }
  check_recovers(comm, a, n);
  r = odd ? sclBarrier(comm, nullptr) : sclAllReduce(a, b, 4000, sclFloat32, sclSum, comm, nullptr);
  if (n > 1) {
    expect_error(r, sclInvalidUsage, comm, odd ? "allreduce(count=4000" : "barrier(",
                 "barrier against allreduce");
  }
  check_recovers(comm, a, n);
  // alltoallv: the odd rank expects one element more from rank 0 than rank 0 sends.
  const size_t un = static_cast<size_t>(n);
  std::vector<size_t> sc(un, 4), sd(un, 0), rc(un, 4), rd(un, 0);
  for (int p = 0; p < n; ++p) sd[size_t(p)] = rd[size_t(p)] = size_t(p) * 8;
  if (odd) rc[0] = 5;
  r = sclAlltoAllv(a, sc.data(), sd.data(), b, rc.data(), rd.data(), sclFloat32, comm, nullptr);
  expect_error(r, sclInvalidUsage, comm, nullptr, "mismatched alltoallv counts");
  check_recovers(comm, a, n);
  // send/recv: the receiver expects a different count.
  if (n > 1) {
    const int peer = g_rank == 0 ? 1 : 0;
    if (g_rank <= 1) {
      r = g_rank == 0 ? sclSend(a, 10, sclFloat32, peer, comm, nullptr)
                      : sclRecv(b, 11, sclFloat32, peer, comm, nullptr);
      expect_error(r, sclInvalidUsage, comm, nullptr, "mismatched send/recv count");
    }
    check_recovers(comm, a, n);
  }
  sclMemFree(a);
  sclMemFree(b);
  expect(sclCommDestroy(comm) == sclSuccess, "destroy");
  std::printf("rank %d: mismatch: %d failures\n", g_rank, g_failures);
  return g_failures ? 1 : 0;
}

int run_size_mismatch(bool across_hosts) {
  // Sizes two ranks disagree on: every rank involved fails with sclInvalidUsage, and the
  // communicator goes on. Two ranks: 0 and 1. Across hosts, a message longer than its receive
  // is truncated, which the network provider (tcp) does not survive: there it runs last, and
  // the communicator is not used after it.
  sclComm_t comm = init_or_die();
  int n = 0;
  sclCommCount(comm, &n);
  float *a, *b;
  sclMemAlloc(reinterpret_cast<void**>(&a), 512 * sizeof(float));
  sclMemAlloc(reinterpret_cast<void**>(&b), 512 * sizeof(float));
  const int peer = 1 - g_rank;
  // Matched sizes, grouped differently on the two ranks (one group of both, or two calls): each
  // rank groups its sends and receives as it likes, so the size check must not depend on it.
  for (int i = 0; i < 100; ++i) a[i] = float(g_rank * 1000 + i);
  sclResult_t r = sclSuccess;
  if (g_rank == 0) {
    sclGroupStart();
    sclSend(a, 100, sclFloat32, peer, comm, nullptr);
    sclRecv(b, 100, sclFloat32, peer, comm, nullptr);
    r = sclGroupEnd();
  } else {
    r = sclRecv(b, 100, sclFloat32, peer, comm, nullptr);
    if (r == sclSuccess) r = sclSend(a, 100, sclFloat32, peer, comm, nullptr);
  }
  bool right = r == sclSuccess;
  for (int i = 0; i < 100; ++i) right = right && b[i] == float(peer * 1000 + i);
  expect(right, "send/recv grouped on one rank only", sclGetLastError(comm));
  for (const size_t expects : {size_t(150), size_t(50)}) {
    const bool goes_on = !across_hosts || expects > 100;
    const std::string what = " (100 sent, " + std::to_string(expects) + " expected)";
    // alltoallv: rank 0 sends 100 to rank 1, which expects `expects`; everything else matches.
    std::vector<size_t> sc(2, 10), sd{0, 200}, rc(2, 10), rd{0, 200};
    if (g_rank == 0) sc[1] = 100;
    if (g_rank == 1) rc[0] = expects;
    r = sclAlltoAllv(a, sc.data(), sd.data(), b, rc.data(), rd.data(), sclFloat32, comm, nullptr);
    expect_error(r, sclInvalidUsage, comm, nullptr, ("alltoallv sizes" + what).c_str());
    if (!goes_on) break;
    check_recovers(comm, a, n);
    r = g_rank == 0 ? sclSend(a, 100, sclFloat32, peer, comm, nullptr)
                    : sclRecv(b, expects, sclFloat32, peer, comm, nullptr);
    expect_error(r, sclInvalidUsage, comm, nullptr, ("send/recv sizes" + what).c_str());
    check_recovers(comm, a, n);
  }
  sclMemFree(a);
  sclMemFree(b);
  expect(sclCommDestroy(comm) == sclSuccess, "destroy");
  std::printf("rank %d: size_mismatch: %d failures\n", g_rank, g_failures);
  return g_failures ? 1 : 0;
}

int run_settings_disagree(const char* expected_text) {
  sclComm_t comm = nullptr;
  const double t0 = now_s();
  const sclResult_t r = sclCommInitFromEnv(&comm);
  const double took = now_s() - t0;
  // At once: the entries run with a 20 s call timeout, which a rank left waiting would reach.
  // Half of it, as init of 4 ranks on 2 cores under ThreadSanitizer has taken over 6 s.
  expect(took < 10.0, "init fails at once", std::to_string(took) + " s");
  expect_error(r, sclInvalidUsage, nullptr, expected_text,
               "init with settings that differ across ranks");
  expect(comm == nullptr, "a failed init leaves no communicator");
  std::printf("settings_disagree: %s\n", sclGetLastError(nullptr));
  return g_failures ? 1 : 0;
}

}  // namespace fault
