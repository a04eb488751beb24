#include "api/user_blocks.h"

#include <atomic>
#include <map>
#include <mutex>

namespace stratacl::api::user_blocks {
namespace {

std::mutex g_mu;
std::map<uintptr_t, size_t>& live() {  // start -> bytes asked for
  static auto* m = new std::map<uintptr_t, size_t>();
  return *m;
}
// Blocks removed so far (written under g_mu): a thread's cached blocks stay valid while it holds.
std::atomic<uint64_t> g_removed{0};

}  // namespace

void add(const void* start, size_t bytes) {
  std::lock_guard lock(g_mu);
  live()[reinterpret_cast<uintptr_t>(start)] = bytes;
}

bool remove(const void* start) {
  std::lock_guard lock(g_mu);
  if (live().erase(reinterpret_cast<uintptr_t>(start)) == 0) return false;
  g_removed.fetch_add(1, std::memory_order_release);
  return true;
}

uint64_t bytes_left(const void* p) {
  // Every call checks its buffers, mostly the same few: the last blocks found, per thread,
  // without the lock, until a block is removed (blocks never move or shrink).
  struct Cached {
    uint64_t removed = ~uint64_t(0);
    uintptr_t start = 0, bytes = 0;
  };
  thread_local Cached cache[4];
  thread_local unsigned next = 0;
  const auto at = reinterpret_cast<uintptr_t>(p);
  const uint64_t removed = g_removed.load(std::memory_order_acquire);
  for (const Cached& b : cache) {
    if (b.removed == removed && at - b.start < b.bytes) return b.start + b.bytes - at;
  }
  std::lock_guard lock(g_mu);
  auto it = live().upper_bound(at);
  if (it == live().begin()) return 0;
  --it;
  if (at - it->first >= it->second) return 0;
  cache[next++ % 4] = Cached{g_removed.load(std::memory_order_relaxed), it->first, it->second};
  return it->first + it->second - at;
}

}  // namespace stratacl::api::user_blocks
