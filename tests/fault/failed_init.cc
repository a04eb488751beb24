// Init or split that fails on one rank only.
//  - failed_init: rank 1 cannot map its peers' heaps (an address-space limit) after the heap
//    exchange, so its init fails while the others' succeeds: they know where its blocks are. It
//    must not free them: it announces its departure, and at once makes a communicator of its own
//    and runs calls on it, whose blocks would take the freed place. The others' first call must
//    fail, naming rank 1, instead of pairing with rank 1's new communicator.
//  - split_failure: rank 1 gives sclCommSplit an invalid config. It still takes part in the
//    split's step, so every rank fails promptly (no timeout), and the parent keeps working.
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "fault_common.h"

namespace fault {
namespace {

// This process's address-space size, bytes.
uint64_t vm_size() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;
  }
  return 0;
}

int env_rank() {
  const char* r = std::getenv("STRATACL_RANK");
  return r ? std::atoi(r) : -1;
}

constexpr size_t kCount = 1024;

}  // namespace

int run_failed_init() {
  g_rank = env_rank();
  if (g_rank == 1) {
    void* warm;
    sclMemAlloc(&warm, 64);  // our own heap exists; a peer's (256 MiB) will not fit any more
    rlimit limit;
    getrlimit(RLIMIT_AS, &limit);
    const rlimit before = limit;
    limit.rlim_cur = vm_size() + (96ull << 20);
    setrlimit(RLIMIT_AS, &limit);
    sclComm_t comm = nullptr;
    const sclResult_t r = sclCommInitFromEnv(&comm);
    setrlimit(RLIMIT_AS, &before);
    std::printf("rank 1: init %s: %s\n", sclGetErrorString(r), sclGetLastError(nullptr));
    expect(r != sclSuccess && comm == nullptr, "init fails under the address-space limit");
    // A communicator of our own, busy with the very call the others make.
    sclUniqueId id;
    sclComm_t solo = nullptr;
    expect(sclGetUniqueId(&id) == sclSuccess && sclCommInitRank(&solo, 1, id, 0) == sclSuccess,
           "a communicator of one");
    float* buf;
    sclMemAlloc(reinterpret_cast<void**>(&buf), kCount * sizeof(float));
    const double until = now_s() + 0.5;  // while the others make their first call
    while (solo && now_s() < until)
      sclAllReduce(buf, buf, kCount, sclFloat32, sclSum, solo, nullptr);
    if (solo) sclCommDestroy(solo);
    return g_failures ? 1 : 0;
  }
  sclComm_t comm = init_or_die();
  float* buf;
  sclMemAlloc(reinterpret_cast<void**>(&buf), kCount * sizeof(float));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // rank 1 is busy elsewhere
  const double t0 = now_s();
  const sclResult_t r = sclAllReduce(buf, buf, kCount, sclFloat32, sclSum, comm, nullptr);
  const double took = now_s() - t0;
  const std::string msg = sclGetLastError(comm);
  std::printf("rank %d: first call %s after %.3f s: %s\n", g_rank, sclGetErrorString(r), took,
              msg.c_str());
  expect(r == sclRemoteError, "the first call fails: rank 1 left", sclGetErrorString(r));
  expect(msg.find("rank 1") != std::string::npos, "the error names rank 1", msg);
  expect(took < 3.0, "promptly", std::to_string(took));
  sclCommDestroy(comm);
  return g_failures ? 1 : 0;
}

int run_split_failure() {
  sclComm_t comm = init_or_die();
  sclConfig_t config = SCL_CONFIG_INITIALIZER;
  if (g_rank == 1) config.timeoutMs = 0;  // below the range of STRATACL_TIMEOUT_MS
  sclComm_t child = nullptr;
  const double t0 = now_s();
  const sclResult_t r = sclCommSplit(comm, 0, g_rank, &child, &config);
  const double took = now_s() - t0;
  std::printf("rank %d: split %s after %.3f s: %s\n", g_rank, sclGetErrorString(r), took,
              sclGetLastError(comm));
  if (g_rank == 1) {
    expect_error(r, sclInvalidArgument, comm, "STRATACL_TIMEOUT_MS", "the bad config");
  } else {
    expect_error(r, sclInvalidUsage, comm, "rank 1", "a peer's bad config");
  }
  expect(child == nullptr, "no child communicator");
  expect(took < 2.0, "every rank fails promptly", std::to_string(took));
  // The parent still works, and so does a valid split.
  float x = float(g_rank);
  expect(sclAllReduce(&x, &x, 1, sclFloat32, sclSum, comm, nullptr) == sclSuccess,
         "the parent works after a failed split");
  expect(sclCommSplit(comm, 0, g_rank, &child, nullptr) == sclSuccess && child,
         "a valid split after a failed one");
  if (child) sclCommDestroy(child);
  sclCommDestroy(comm);
  return g_failures ? 1 : 0;
}

}  // namespace fault
