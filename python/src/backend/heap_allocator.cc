#include "backend/heap_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "stratacl/stratacl.h"

namespace stratacl_torch {
namespace {

// The span of addresses the heap has handed out. The heap is one mapping, so every address in
// the span is heap memory and none of c10's: a pointer is freed by whoever it came from, with
// nothing stored beside it. (c10 frees some tensors through raw_deleter(), without the DataPtr's
// own deleter, so one function must know both kinds.)
std::atomic<uintptr_t> g_low{UINTPTR_MAX}, g_high{0};

void note_heap_block(void* p, size_t bytes) {
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = lo + bytes;
  for (uintptr_t cur = g_low.load(); lo < cur && !g_low.compare_exchange_weak(cur, lo);) {
  }
  for (uintptr_t cur = g_high.load(); hi > cur && !g_high.compare_exchange_weak(cur, hi);) {
  }
}

// STRATACL_TORCH_CACHE_BYTES: bytes with an optional K/M/G suffix, default 1 GiB. The library's
// registry lists it (scl-info) and checks its form at every communicator init.
size_t cache_limit() {
  const char* env = std::getenv("STRATACL_TORCH_CACHE_BYTES");
  if (!env || !*env) return size_t(1) << 30;
  char* end = nullptr;
  size_t n = std::strtoull(env, &end, 10);
  switch (*end) {
    case 'G':
    case 'g':
      n <<= 10;
      [[fallthrough]];
    case 'M':
    case 'm':
      n <<= 10;
      [[fallthrough]];
    case 'K':
    case 'k':
      n <<= 10;
  }
  return n;
}

// Freed heap blocks kept for reuse, as CUDA's caching allocator keeps device memory: a training
// step frees and allocates the same activation sizes every iteration, and handing them back to
// the heap would cost a hole punch and fresh page faults each time (measured: a step 1.5x
// slower). A serving step's sizes change with its batch, so sizes round up to classes (512 B
// steps below 64 KiB, then four classes per power of two: at most 25% unused) and a request of
// 64 KiB or more takes the smallest cached block of its class or up to two classes above (then
// up to 43% unused); smaller ones take their own class only. Measured on the serving
// engine (workloads/serve): exact sizes faulted 156k pages a rank where malloc faults 101k, and
// prefill steps took 95 ms against 77; with classes, 102k faults and 77 ms.
// STRATACL_TORCH_CACHE_BYTES bounds what it holds (0: off).
class BlockCache {
 public:
  BlockCache() {
    limit_ = cache_limit();
    pthread_atfork(nullptr, nullptr, [] { forked_child = true; });
  }
  static size_t rounded(size_t bytes) {
    if (bytes < (64u << 10)) return (bytes + 511) / 512 * 512;
    if (bytes > (SIZE_MAX >> 3)) return bytes;    // no heap holds it: the rounding must not wrap
    const int top = 63 - __builtin_clzll(bytes);  // 2^top <= bytes
    const size_t quarter = size_t(1) << (top - 2);
    return (bytes + quarter - 1) / quarter * quarter;
  }
  void* take(size_t size) {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t most = size < (64u << 10) ? size : rounded(rounded(size + 1) + 1);
    auto it = free_.lower_bound(size);
    while (it != free_.end() && it->first <= most && it->second.empty()) ++it;
    if (it == free_.end() || it->first > most) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    held_ -= it->first;
    return p;
  }
  // False when the block does not fit under the limit: the caller frees it.
  bool give(void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    auto size = sizes_.find(p);
    if (size == sizes_.end() || held_ + size->second > limit_) return false;
    free_[size->second].push_back(p);
    held_ += size->second;
    return true;
  }
  void note(void* p, size_t size) {
    std::lock_guard<std::mutex> lock(mu_);
    sizes_[p] = size;
  }
  void forget(void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    sizes_.erase(p);
  }
  // In a forked child the heap is not mapped: nothing may come from or go to the cache.
  static inline std::atomic<bool> forked_child{false};

 private:
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;  // block size -> cached blocks
  std::unordered_map<void*, size_t> sizes_;    // every live or cached heap block
  size_t held_ = 0, limit_;
};

BlockCache& cache() {
  static BlockCache* c = new BlockCache();  // lives as long as the heap: never destroyed
  return *c;
}

void free_any(void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (a >= g_low.load() && a < g_high.load()) {
    // In a forked child StrataCL refuses, and the heap is not mapped there: nothing to free.
    if (BlockCache::forked_child.load() || cache().give(p)) return;
    cache().forget(p);
    sclMemFree(p);
  } else {
    c10::free_cpu(p);
  }
}

class HeapAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t bytes) const override {
    void* p = nullptr;
    const size_t size = BlockCache::rounded(bytes);
    if (bytes > 0 && !BlockCache::forked_child.load()) {
      p = cache().take(size);
      if (!p && sclMemAlloc(&p, size) == sclSuccess) {
        note_heap_block(p, size);
        cache().note(p, size);
      }
    }
    if (!p) {
      p = c10::alloc_cpu(bytes);  // what c10's own CPU allocator does
    }
    return {p, p, &free_any, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_any; }
};

HeapAllocator* instance() {
  static HeapAllocator heap;
  return &heap;
}

}  // namespace

c10::Allocator* heap_allocator() { return instance(); }

void use_heap_allocator() {
  static std::once_flag once;
  // Above the default CPU allocator's priority (0), so later registrations at 0 do not undo it.
  std::call_once(once, [] { c10::SetCPUAllocator(instance(), /*priority=*/1); });
}

}  // namespace stratacl_torch
