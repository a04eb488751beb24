// The timeout bounds a whole call, not each wait in it, and survivors blame the right rank.
//  - call_deadline: rank 0 stops and resumes rank 1 in bursts (SIGSTOP for 200 ms, SIGCONT for
//    1 ms) while both run one allreduce of foreign memory cut into 8192 rounds (256 MiB through
//    a 64 KiB staging area). No single wait lasts the timeout (1 s); the call as a whole does, and
//    rank 0 must give up about one timeout after it first had to wait.
//  - stop_culprit: three ranks, rank 1 stopped. Rank 0 times out, names rank 1 and exits at once;
//    rank 2, which started its call later, must name rank 1 too, not rank 0 ("died").
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "fault_common.h"

namespace fault {
namespace {

std::vector<pid_t> all_pids(sclComm_t comm, int n) {
  std::vector<int64_t> pids(static_cast<size_t>(n));
  int64_t mine = getpid();
  sclAllGather(&mine, pids.data(), 1, sclInt64, comm, nullptr);
  return std::vector<pid_t>(pids.begin(), pids.end());
}

}  // namespace

int run_call_deadline() {
  // The parent keeps the launch's long timeout: filling 256 MiB under a sanitizer on a loaded
  // machine can take one rank more than a second longer than the other. Only the call under
  // test runs on a child whose timeout is 1 s.
  sclComm_t parent = init_or_die();
  const std::vector<pid_t> pids = all_pids(parent, 2);
  const size_t count = 64u << 20;  // 256 MiB of floats, malloc'd: staged 32 KiB per round
  std::vector<float> buf(count, 1.0f);
  sclConfig_t config = SCL_CONFIG_INITIALIZER;
  config.timeoutMs = 1000;
  config.stagingBytes = 64 << 10;
  sclComm_t comm = nullptr;
  if (sclCommSplit(parent, 0, g_rank, &comm, &config) != sclSuccess) {
    std::fprintf(stderr, "split failed: %s\n", sclGetLastError(parent));
    return 2;
  }
  std::atomic<bool> done{false};
  std::thread cycler;
  if (g_rank == 0) {
    cycler = std::thread([&] {
      while (!done) {
        kill(pids[1], SIGSTOP);
        for (int i = 0; i < 40 && !done; ++i) usleep(5000);
        kill(pids[1], SIGCONT);
        usleep(1000);
      }
      kill(pids[1], SIGCONT);
    });
  }
  // Rank 1 starts later, so its deadline comes later: filling 256 MiB under a sanitizer can
  // take rank 0 long enough that rank 1, waiting for it, would otherwise time out first.
  if (g_rank == 1) usleep(300 * 1000);
  const double t0 = now_s();
  const sclResult_t r =
      sclAllReduce(buf.data(), buf.data(), count, sclFloat32, sclSum, comm, nullptr);
  const double took = now_s() - t0;
  done = true;
  if (cycler.joinable()) cycler.join();
  std::printf("rank %d: %s after %.3f s: %s\n", g_rank, sclGetErrorString(r), took,
              sclGetLastError(comm));
  if (g_rank == 0) {
    expect(r == sclTimeout, "the call times out as a whole", sclGetErrorString(r));
    expect(took < 2.0, "about one timeout after it first waited", std::to_string(took));
  } else {
    expect(r == sclTimeout || r == sclRemoteError, "the stopped rank fails too");
  }
  sclCommDestroy(comm);
  sclCommDestroy(parent);
  return g_failures ? 1 : 0;
}

int run_stop_culprit() {
  sclComm_t comm = init_or_die();
  const std::vector<pid_t> pids = all_pids(comm, 3);
  float* a;
  sclMemAlloc(reinterpret_cast<void**>(&a), 256 * sizeof(float));
  for (int it = 0; it < 100; ++it) {
    if (it == 20 && g_rank == 1) raise(SIGSTOP);
    if (it == 20 && g_rank == 2) usleep(500 * 1000);  // its deadline comes after rank 0 exited
    const sclResult_t r = sclAllReduce(a, a, 256, sclFloat32, sclSum, comm, nullptr);
    if (r == sclSuccess) continue;
    const std::string msg = sclGetLastError(comm);
    std::printf("rank %d: %s: %s\n", g_rank, sclGetErrorString(r), msg.c_str());
    if (g_rank == 0) {
      expect(r == sclTimeout && msg.find("rank 1") != std::string::npos,
             "the first to time out names the stopped rank", msg);
      std::fflush(stdout);
      _exit(g_failures ? 1 : 0);  // exits at once: rank 2 is still waiting
    }
    if (g_rank == 2) {
      expect(msg.find("rank 1 (pid") != std::string::npos &&
                 msg.find("rank 0 (pid " + std::to_string(pids[0]) + ") died") == std::string::npos,
             "a later survivor names the stopped rank, not the one that exited", msg);
      kill(pids[1], SIGCONT);
    }
    sclCommDestroy(comm);
    return g_failures ? 1 : 0;
  }
  expect(false, "the loop finished although a rank was stopped");
  return 1;
}

}  // namespace fault
