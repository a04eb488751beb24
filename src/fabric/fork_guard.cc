#include "fabric/fork_guard.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include "fabric/heap.h"

namespace stratacl {
namespace {

const Heap* g_guarded = nullptr;
pid_t g_parent = 0;
std::atomic<bool> g_forked{false};

// Runs in the child right after fork(), before fork returns there: only async-signal-safe calls.
void in_child() {
  g_forked.store(true, std::memory_order_relaxed);
  // The DONTFORK range is unmapped here; map the heap's current contents privately in its place.
  // The memfd is still open in the child (close-on-exec only closes it at exec).
  if (const Heap* h = g_guarded) {
    mmap(h->base(), h->capacity(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE,
         h->fd(), 0);
  }
}

}  // namespace

void install_fork_guard(const Heap* data_heap) {
  static std::once_flag once;
  std::call_once(once, [&] {
    g_guarded = data_heap;
    g_parent = getpid();
    pthread_atfork(nullptr, nullptr, in_child);
  });
}

bool in_forked_child() { return g_forked.load(std::memory_order_relaxed); }

Status fork_refusal() {
  return Errorf(sclInvalidUsage,
                "this process (pid %d) was forked from pid %d after StrataCL started there: its "
                "communicators and heap belong to the parent, so StrataCL refuses every call "
                "here (heap buffers made before the fork stay readable as private copies). Use "
                "StrataCL in the parent only, or start children with exec (Python "
                "multiprocessing's \"spawn\")",
                int(getpid()), int(g_parent));
}

}  // namespace stratacl
