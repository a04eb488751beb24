// Peers that die, stop, never arrive, abort or leave: survivors get an error that names the
// rank, within the configured timeout (and a death within a second), instead of hanging.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "fault_common.h"

namespace fault {
namespace {

// A MoE dispatch and its combine (token-major, H = 256, top-2 of 2 experts per rank, 64 tokens
// per rank spread over every rank, heap buffers): survivors are in the middle of reading the
// victim's rows when it dies, or waiting for it.
sclResult_t moe_round(int n, sclComm_t comm) {
  constexpr int kH = 256, kT = 64, kK = 2;
  static sclMoe_t moe = nullptr;
  static uint16_t *x, *rx, *eo, *out;
  static int64_t *ids, *rids;
  static float* rw;
  static int *per_expert, *rows;
  if (!moe) {
    sclMoeConfig_t c = SCL_MOE_CONFIG_INITIALIZER;
    c.hidden = kH, c.topk = kK, c.numExperts = 2 * n, c.maxTokensPerRank = kT;
    if (sclMoeCreate(comm, &c, &moe) != sclSuccess) return sclInternalError;
    auto alloc = [](size_t bytes) {
      void* p = nullptr;
      sclMemAlloc(&p, bytes);
      return p;
    };
    const size_t rows_max = size_t(n) * kT;
    x = static_cast<uint16_t*>(alloc(kT * kH * 2));
    rx = static_cast<uint16_t*>(alloc(rows_max * kH * 2));
    eo = static_cast<uint16_t*>(alloc(rows_max * kH * 2));
    out = static_cast<uint16_t*>(alloc(kT * kH * 2));
    ids = static_cast<int64_t*>(alloc(kT * kK * 8));
    rids = static_cast<int64_t*>(alloc(rows_max * kK * 8));
    rw = static_cast<float*>(alloc(rows_max * kK * 4));
    per_expert = static_cast<int*>(alloc(8));
    rows = static_cast<int*>(alloc(4));
    for (int t = 0; t < kT; ++t) {
      ids[t * kK] = 2 * (t % n);
      ids[t * kK + 1] = 2 * ((t + 1) % n) + 1;
    }
  }
  const sclMoeTokens_t in{x, nullptr, ids, nullptr, kT};
  sclMoeRecv_t recv{rx, nullptr, rids, rw, per_expert, rows};
  sclMoeHandle_t h = nullptr;
  sclResult_t r = sclMoeDispatch(moe, &in, &recv, &h, nullptr);
  if (r != sclSuccess) {
    expect(h == nullptr, "a failed dispatch leaves *handle NULL");
    return r;
  }
  r = sclMoeCombine(moe, h, eo, nullptr, out, nullptr);
  sclMoeHandleDestroy(h);
  return r;
}

// One iteration of the workload a victim dies in.
sclResult_t workload(const std::string& phase, float* a, float* b, int n, sclComm_t comm,
                     sclStream_t stream) {
  if (phase == "alltoall") return sclAlltoAll(a, b, 1024, sclFloat32, comm, nullptr);
  if (phase == "moe") return moe_round(n, comm);
  if (phase == "stream") {
    // A queue of calls; the error surfaces at synchronisation and as the async error.
    for (int i = 0; i < 8; ++i) sclAllReduce(a, a, 1024, sclFloat32, sclMax, comm, stream);
    sclResult_t r = sclStreamSynchronize(stream);
    sclResult_t async = sclSuccess;
    sclCommGetAsyncError(comm, &async);
    if (r != sclSuccess) expect(async == r, "async error matches the stream's error");
    return r;
  }
  (void)n;
  return sclAllReduce(a, a, 1024 * size_t(n), sclFloat32, sclMax, comm, nullptr);
}

}  // namespace

int run_kill_survivor(int victim, const std::string& phase) {
  const int iterations = 400;
  if (phase == "init") {
    // The victim dies before it joins; the others must give up at the bootstrap deadline.
    const char* r = std::getenv("STRATACL_RANK");
    if (r && std::atoi(r) == victim) raise(SIGKILL);
    sclComm_t comm = nullptr;
    const double t0 = now_s();
    sclResult_t rc = sclCommInitFromEnv(&comm);
    const std::string msg = sclGetLastError(nullptr);
    std::printf("SURVIVED: init: %s after %.3f s: %s\n", sclGetErrorString(rc), now_s() - t0,
                msg.c_str());
    expect(rc == sclTimeout || rc == sclInvalidUsage || rc == sclRemoteError,
           "init fails when a rank dies before joining", sclGetErrorString(rc));
    expect(comm == nullptr, "no communicator after a failed init");
    return g_failures ? 1 : 0;
  }
  sclComm_t comm = init_or_die();
  int n = 0;
  sclCommCount(comm, &n);
  float *a, *b;
  sclMemAlloc(reinterpret_cast<void**>(&a), 1024 * sizeof(float) * size_t(n));
  sclMemAlloc(reinterpret_cast<void**>(&b), 1024 * sizeof(float) * size_t(n));
  sclStream_t stream = nullptr;
  sclStreamCreate(&stream);
  for (int it = 0; it < iterations; ++it) {
    if (g_rank == victim && it == iterations / 2) {
      if (phase != "moe") raise(SIGKILL);  // dies mid-loop, no cleanup
      // MoE: dies from another thread a moment later, most likely inside a dispatch or combine
      // while its peers read its rows.
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        raise(SIGKILL);
      }).detach();
    }
    const double t0 = now_s();
    sclResult_t r = workload(phase, a, b, n, comm, stream);
    if (r != sclSuccess) {
      const double took = now_s() - t0;
      const std::string msg = sclGetLastError(comm);
      const std::string want = "rank " + std::to_string(victim);
      std::printf("rank %d: SURVIVED: %s iteration %d: %s after %.3f s: %s\n", g_rank,
                  phase.c_str(), it, sclGetErrorString(r), took, msg.c_str());
      expect(r == sclRemoteError, "error code after a peer died", sclGetErrorString(r));
      expect(msg.find(want) != std::string::npos, "error names the dead rank", msg);
      expect(took < 1.0, "death detected within a second", std::to_string(took));
      // Later calls fail the same way: the communicator is revoked.
      expect(sclAllReduce(a, a, 16, sclFloat32, sclMax, comm, nullptr) == sclRemoteError,
             "later call on the revoked communicator");
      sclStreamDestroy(stream);
      expect(sclCommDestroy(comm) == sclSuccess, "destroy after a death");
      return g_failures ? 1 : 0;
    }
  }
  expect(false, "the loop finished although a rank died");
  return 1;
}

int run_stopped_rank() {
  // Run with a small STRATACL_TIMEOUT_MS. Rank 1 stops itself (SIGSTOP) mid-loop: the others
  // time out naming it, revoke, and wake it with SIGCONT; it then learns the error too.
  sclComm_t comm = init_or_die();
  int n = 0;
  sclCommCount(comm, &n);
  int64_t* pids;
  sclMemAlloc(reinterpret_cast<void**>(&pids), sizeof(int64_t) * size_t(n));
  int64_t mine = getpid();
  sclAllGather(&mine, pids, 1, sclInt64, comm, nullptr);
  float* a;
  sclMemAlloc(reinterpret_cast<void**>(&a), 256 * sizeof(float));
  const int victim = 1;
  for (int it = 0; it < 100; ++it) {
    if (g_rank == victim && it == 50) raise(SIGSTOP);
    const double t0 = now_s();
    sclResult_t r = sclAllReduce(a, a, 256, sclFloat32, sclSum, comm, nullptr);
    if (r == sclSuccess) continue;
    const std::string msg = sclGetLastError(comm);
    std::printf("rank %d: %s after %.3f s: %s\n", g_rank, sclGetErrorString(r), now_s() - t0,
                msg.c_str());
    if (g_rank == victim) {
      expect(r == sclRemoteError, "the resumed rank sees the revocation", sclGetErrorString(r));
    } else {
      // The first survivor to time out names the stopped rank; others may instead see that
      // survivor's revocation, which must name the stopped rank as the cause.
      expect(r == sclTimeout || r == sclRemoteError, "timeout or revocation", sclGetErrorString(r));
      expect(msg.find("rank 1") != std::string::npos, "error names the stopped rank", msg);
      kill(pid_t(pids[victim]), SIGCONT);
    }
    sclCommDestroy(comm);
    return g_failures ? 1 : 0;
  }
  expect(false, "the loop finished although a rank was stopped");
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
  const std::string msg = sclGetLastError(comm);
  std::printf("rank %d: %s after %.3f s: %s\n", g_rank, sclGetErrorString(r), took, msg.c_str());
  // The ranks that waited for the late rank time out; a rank that instead saw another
  // survivor's revocation reports that (a remote error), also promptly.
  expect(r == sclTimeout || r == sclRemoteError, "timeout when a peer never arrives",
         sclGetErrorString(r));
  if (r == sclTimeout) {
    expect(msg.find("allreduce #1") != std::string::npos, "names the call and its number", msg);
    expect(msg.find("Late: rank 1 at step 0") != std::string::npos, "names the late rank", msg);
  }
  expect(took < 3.0, "gave up within the timeout", std::to_string(took));
  sclCommDestroy(comm);
  return g_failures ? 1 : 0;
}

int run_abort() {
  sclComm_t comm = init_or_die();
  int n = 0;
  sclCommCount(comm, &n);
  double* when;  // rank 0 publishes the moment it aborts, on the host-wide monotonic clock
  sclMemAlloc(reinterpret_cast<void**>(&when), sizeof(double) * size_t(n));
  float* a;
  sclMemAlloc(reinterpret_cast<void**>(&a), 256 * sizeof(float));
  char path[64];
  std::snprintf(path, sizeof path, "/tmp/stratacl-abort-%d", int(getppid()));
  if (g_rank == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the others are waiting
    const double t = now_s();
    if (FILE* f = std::fopen(path, "w")) {
      std::fprintf(f, "%.9f\n", t);
      std::fclose(f);
    }
    expect(sclCommAbort(comm) == sclSuccess, "abort");
    return g_failures ? 1 : 0;
  }
  sclResult_t r = sclAllReduce(a, a, 256, sclFloat32, sclSum, comm, nullptr);
  const double seen = now_s();
  double aborted_at = 0;
  if (FILE* f = std::fopen(path, "r")) {
    if (std::fscanf(f, "%lf", &aborted_at) != 1) aborted_at = 0;
    std::fclose(f);
  }
  const double latency = seen - aborted_at;
  std::printf("rank %d: %s %.1f ms after the abort: %s\n", g_rank, sclGetErrorString(r),
              latency * 1e3, sclGetLastError(comm));
  expect(r == sclRemoteError, "remote error after a peer aborted", sclGetErrorString(r));
  expect(aborted_at > 0 && latency < 0.1, "noticed the abort within 100 ms",
         std::to_string(latency));
  expect(sclCommDestroy(comm) == sclSuccess, "destroy after abort");
  if (g_rank == 1) unlink(path);
  return g_failures ? 1 : 0;
}

int run_destroy_during_call() {
  // Rank 0 destroys the communicator while the others wait in an allreduce: they fail at once.
  sclComm_t comm = init_or_die();
  float* a;
  sclMemAlloc(reinterpret_cast<void**>(&a), 256 * sizeof(float));
  if (g_rank == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const double t0 = now_s();
    expect(sclCommDestroy(comm) == sclSuccess, "destroy while peers are in a call");
    std::printf("rank 0: destroy returned after %.3f s\n", now_s() - t0);
    return g_failures ? 1 : 0;
  }
  const double t0 = now_s();
  sclResult_t r = sclAllReduce(a, a, 256, sclFloat32, sclSum, comm, nullptr);
  const std::string msg = sclGetLastError(comm);
  std::printf("rank %d: %s after %.3f s: %s\n", g_rank, sclGetErrorString(r), now_s() - t0,
              msg.c_str());
  expect(r == sclRemoteError, "a peer's destroy fails the pending call", sclGetErrorString(r));
  expect(msg.find("rank 0") != std::string::npos && msg.find("destroyed") != std::string::npos,
         "error names the rank that destroyed", msg);
  expect(now_s() - t0 < 1.5, "promptly");
  expect(sclCommDestroy(comm) == sclSuccess, "destroy after the failure");
  return g_failures ? 1 : 0;
}

}  // namespace fault
