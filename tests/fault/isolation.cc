// What a process shares with its peers and its children.
//  - fork_child: a process that forks after init (a PyTorch DataLoader worker does). In the
//    child every entry point returns sclInvalidUsage saying why; the heap buffers it inherited
//    read as they were, as private copies (its writes stay its own) and no shared mapping of any
//    heap is left in it; the parent's job continues untouched.
//  - read_only_heaps: /proc/self/maps shows exactly one writable mapping of a data heap, our
//    own; every peer's data heap is mapped read-only; our heap's memfd refuses to shrink or
//    grow; and a store into a peer's heap faults instead of corrupting it.
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fabric/heap.h"
#include "fault_common.h"

namespace fault {
namespace {

struct Mapping {
  uintptr_t lo = 0, hi = 0;
  std::string perms, path;
};

// Our mappings of heap segments (memfds named stratacl-heap or stratacl-doorbells).
std::vector<Mapping> heap_mappings(const char* name) {
  std::vector<Mapping> out;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find(name) == std::string::npos) continue;
    std::istringstream in(line);
    Mapping m;
    std::string range;
    in >> range >> m.perms;
    m.lo = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    m.hi = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
    m.path = line.substr(line.find('/'));
    out.push_back(m);
  }
  return out;
}

int count(const std::vector<Mapping>& maps, const std::string& perms) {
  int n = 0;
  for (const Mapping& m : maps) n += m.perms == perms;
  return n;
}

sigjmp_buf g_fault_jump;
void on_fault(int) { siglongjmp(g_fault_jump, 1); }

// True when storing one byte at p faults.
bool store_faults(volatile char* p) {
  struct sigaction sa {
  }, old_segv{}, old_bus{};
  sa.sa_handler = on_fault;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &old_segv);
  sigaction(SIGBUS, &sa, &old_bus);
  volatile bool faulted = true;  // volatile: it must survive the longjmp
  if (sigsetjmp(g_fault_jump, 1) == 0) {
    *p = 42;
    faulted = false;
  }
  sigaction(SIGSEGV, &old_segv, nullptr);
  sigaction(SIGBUS, &old_bus, nullptr);
  return faulted;
}

constexpr size_t kCount = 4096;

void allreduce_checked(sclComm_t comm, float* buf, int n, int it) {
  for (size_t i = 0; i < kCount; ++i) buf[i] = float(g_rank + 1 + it);
  expect(sclAllReduce(buf, buf, kCount, sclFloat32, sclSum, comm, nullptr) == sclSuccess,
         "allreduce");
  const float want = float(n * (n + 1) / 2 + n * it);
  size_t wrong = 0;
  for (size_t i = 0; i < kCount; ++i) wrong += buf[i] != want;
  expect(wrong == 0, "every element of the allreduce", std::to_string(wrong) + " wrong");
}

// Runs in the forked child; returns its exit status.
int child_checks(sclComm_t comm, float* inherited, float want) {
  size_t wrong = 0;
  for (size_t i = 0; i < kCount; ++i) wrong += inherited[i] != want;
  expect(wrong == 0, "the child reads inherited heap buffers", std::to_string(wrong) + " wrong");
  inherited[0] = -1.0f;  // private: the parent must not see it
  void* p = nullptr;
  sclStream_t s = nullptr;
  expect_error(sclMemAlloc(&p, 64), sclInvalidUsage, nullptr, "forked", "sclMemAlloc in a child");
  expect_error(sclAllReduce(inherited, inherited, kCount, sclFloat32, sclSum, comm, nullptr),
               sclInvalidUsage, nullptr, "forked", "sclAllReduce in a child");
  expect_error(sclBarrier(comm, nullptr), sclInvalidUsage, nullptr, "forked", "sclBarrier");
  expect_error(sclStreamCreate(&s), sclInvalidUsage, nullptr, "forked", "sclStreamCreate");
  expect_error(sclMemFree(inherited), sclInvalidUsage, nullptr, "forked", "sclMemFree");
  expect_error(sclCommDestroy(comm), sclInvalidUsage, nullptr, "forked", "sclCommDestroy");
  sclComm_t other = nullptr;
  expect_error(sclCommInitFromEnv(&other), sclInvalidUsage, nullptr, "forked", "init in a child");
  for (const char* name : {"stratacl-heap", "stratacl-doorbells"}) {
    for (const Mapping& m : heap_mappings(name)) {
      expect(m.perms[3] != 's', "no shared heap mapping in a child", m.perms + " " + m.path);
    }
  }
  return g_failures ? 1 : 0;
}

}  // namespace

int run_fork_child() {
  sclComm_t comm = init_or_die();
  int n = 0;
  sclCommCount(comm, &n);
  float* buf;
  sclMemAlloc(reinterpret_cast<void**>(&buf), kCount * sizeof(float));
  allreduce_checked(comm, buf, n, 0);
  if (g_rank == 0) {
    const pid_t child = fork();
    if (child == 0) _exit(child_checks(comm, buf, float(n * (n + 1) / 2)));
    int status = 0;
    waitpid(child, &status, 0);
    expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's checks",
           "status " + std::to_string(status));
    expect(buf[0] == float(n * (n + 1) / 2), "the child's write stayed in the child");
  }
  for (int it = 1; it <= 200; ++it) allreduce_checked(comm, buf, n, it);  // the job goes on
  sclMemFree(buf);
  expect(sclCommDestroy(comm) == sclSuccess, "destroy");
  std::printf("rank %d: fork_child: %s\n", g_rank, g_failures ? "FAILED" : "OK");
  return g_failures ? 1 : 0;
}

int run_read_only_heaps() {
  sclComm_t comm = init_or_die();
  int n = 0;
  sclCommCount(comm, &n);
  float* buf;
  sclMemAlloc(reinterpret_cast<void**>(&buf), kCount * sizeof(float));
  allreduce_checked(comm, buf, n, 0);

  const std::vector<Mapping> data = heap_mappings("stratacl-heap");
  expect(count(data, "rw-s") == 1, "exactly one writable data-heap mapping: our own",
         std::to_string(count(data, "rw-s")));
  expect(count(data, "r--s") == n - 1, "every peer's data heap is mapped read-only",
         std::to_string(count(data, "r--s")) + " of " + std::to_string(n - 1));
  const std::vector<Mapping> bells = heap_mappings("stratacl-doorbells");
  expect(count(bells, "rw-s") == n, "doorbell heaps (ours and the peers') are writable",
         std::to_string(count(bells, "rw-s")));

  stratacl::Heap* heap = stratacl::existing_heap();
  const off_t size = off_t(heap->capacity());
  expect(ftruncate(heap->fd(), size / 2) != 0 && errno == EPERM, "the heap refuses to shrink");
  expect(ftruncate(heap->fd(), size * 2) != 0 && errno == EPERM, "the heap refuses to grow");

  for (const Mapping& m : data) {
    if (m.perms != "r--s") continue;
    expect(store_faults(reinterpret_cast<volatile char*>(m.lo)),
           "a store into a peer's heap faults");
    break;
  }
  allreduce_checked(comm, buf, n, 1);
  sclMemFree(buf);
  expect(sclCommDestroy(comm) == sclSuccess, "destroy");
  std::printf("rank %d: read_only_heaps: %d peer heaps read-only: %s\n", g_rank,
              count(data, "r--s"), g_failures ? "FAILED" : "OK");
  return g_failures ? 1 : 0;
}

}  // namespace fault
