// Init/destroy cycles leak nothing: file descriptors, mappings, threads, heap bytes and peer
// mappings are counted before and after, and no socket stays open once init has returned.
#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "fabric/heap.h"
#include "fabric/peer_heaps.h"
#include "fault_common.h"

namespace fault {
namespace {

struct Counts {
  int fds = 0, sockets = 0, maps = 0, threads = 0, peer_heaps = 0;
  uint64_t heap_bytes = 0, heap_blocks = 0;
  bool operator==(const Counts&) const = default;
  std::string text() const {
    return "fds " + std::to_string(fds) + ", sockets " + std::to_string(sockets) + ", maps " +
           std::to_string(maps) + ", threads " + std::to_string(threads) + ", peer heaps " +
           std::to_string(peer_heaps) + ", heap bytes " + std::to_string(heap_bytes) + " in " +
           std::to_string(heap_blocks) + " blocks";
  }
};

int count_dir(const char* path, std::string* sockets_prefix = nullptr, int* sockets = nullptr) {
  int n = 0;
  DIR* d = opendir(path);
  if (!d) return -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    ++n;
    if (sockets) {
      char target[256] = {0};
      std::string link = std::string(path) + "/" + e->d_name;
      if (readlink(link.c_str(), target, sizeof target - 1) > 0 &&
          std::string(target).rfind(*sockets_prefix, 0) == 0) {
        ++*sockets;
      }
    }
  }
  closedir(d);
  return n;
}

Counts snapshot() {
  Counts c;
  std::string prefix = "socket:";
  c.fds = count_dir("/proc/self/fd", &prefix, &c.sockets) - 1;  // minus the DIR's own fd
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) ++c.maps;
  c.threads = count_dir("/proc/self/task");
  c.peer_heaps = stratacl::mapped_peer_heaps();
  if (stratacl::Heap* h = stratacl::existing_heap()) {
    stratacl::Heap::Stats s = h->stats();
    c.heap_bytes = s.in_use;
    c.heap_blocks = s.live_blocks;
  }
  return c;
}

// The rendezvous root thread of rank 0 may still be sending the table when init returns.
Counts settled_snapshot(const Counts& want) {
  Counts c = snapshot();
  for (int i = 0; i < 200 && !(c == want); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    c = snapshot();
  }
  return c;
}

void one_cycle(int n_expected) {
  sclComm_t comm = init_or_die();
  Counts after_init = snapshot();
  for (int i = 0; i < 200 && after_init.sockets > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    after_init = snapshot();
  }
  expect(after_init.sockets == 0, "no socket open after init", after_init.text());
  int n = 0;
  sclCommCount(comm, &n);
  expect(n == n_expected, "rank count");
  float* a = nullptr;
  sclMemAlloc(reinterpret_cast<void**>(&a), 64 * sizeof(float));
  for (int i = 0; i < 64; ++i) a[i] = 1.0f;
  expect(
      sclAllReduce(a, a, 64, sclFloat32, sclSum, comm, nullptr) == sclSuccess && a[63] == float(n),
      "allreduce in a cycle", sclGetLastError(comm));
  sclMemFree(a);
  expect(sclCommDestroy(comm) == sclSuccess, "destroy in a cycle");
}

}  // namespace

int run_cycles(int cycles) {
  const char* size = std::getenv("STRATACL_WORLD_SIZE");
  const int n = size ? std::atoi(size) : 1;
  one_cycle(n);  // warm-up: creates the heap, the peers' mappings come and go
  const Counts before = settled_snapshot(snapshot());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < cycles && g_failures == 0; ++i) one_cycle(n);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Counts after = settled_snapshot(before);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // A sanitizer's own allocator maps memory as it grows (LeakSanitizer checks our heap use
  // there instead); the release build compares mappings exactly.
  after.maps = before.maps;
#endif
  expect(after == before, "nothing leaked",
         "before: " + before.text() + "; after: " + after.text());
  int shm = 0;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      shm += std::string(e->d_name).find("stratacl") != std::string::npos;
    closedir(d);
  }
  expect(shm == 0, "nothing of ours in /dev/shm");
  std::printf("rank %d: %d init/destroy cycles in %.1f s (%.2f ms each); before: %s; after: %s\n",
              g_rank, cycles, secs, secs * 1e3 / cycles, before.text().c_str(),
              after.text().c_str());
  return g_failures ? 1 : 0;
}

}  // namespace fault
