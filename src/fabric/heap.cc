#include "fabric/heap.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <atomic>

#include "core/config.h"

namespace stratacl {
namespace {
std::atomic<Heap*> g_heap{nullptr};
std::mutex g_create_mu;
}  // namespace

Heap::Heap(UniqueFd fd, char* base, uint64_t capacity, uint64_t nonce)
    : fd_(std::move(fd)), base_(base), capacity_(capacity), nonce_(nonce), alloc_(capacity) {}

Heap* existing_heap() { return g_heap.load(std::memory_order_acquire); }

Result<Heap*> Heap::instance() {
  if (Heap* h = existing_heap()) return h;
  std::lock_guard<std::mutex> lock(g_create_mu);
  if (Heap* h = existing_heap()) return h;
  Result<Heap*> h = create();
  if (h.ok()) g_heap.store(*h, std::memory_order_release);
  return h;
}

Result<Heap*> Heap::create() {
  Result<Setting> cap = process_setting(Var::kHeapBytes);
  if (!cap.ok()) return cap.status();
  const uint64_t capacity = uint64_t(cap->value) & ~uint64_t(RangeAllocator::kPage - 1);
  UniqueFd fd(memfd_create("stratacl-heap", MFD_CLOEXEC));
  if (!fd.valid()) return SystemErrorf("heap: memfd_create");
  if (ftruncate(fd.get(), off_t(capacity)) != 0) {
    return SystemErrorf("heap: ftruncate to %llu bytes (STRATACL_HEAP_BYTES)",
                        (unsigned long long)capacity);
  }
  // MAP_NORESERVE: capacity is address space; pages are committed only when touched.
  void* base =
      mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd.get(), 0);
  if (base == MAP_FAILED)
    return SystemErrorf("heap: mmap of %llu bytes", (unsigned long long)capacity);
  uint64_t nonce = 0;
  if (getrandom(&nonce, sizeof nonce, 0) != sizeof nonce) {
    munmap(base, capacity);
    return SystemErrorf("heap: getrandom");
  }
  // Process lifetime: peers map this segment for as long as any communicator lives, and
  // user buffers may outlive every communicator, so the heap is never torn down.
  return new Heap(std::move(fd), static_cast<char*>(base), capacity, nonce);
}

Result<void*> Heap::allocate(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto blk = alloc_.allocate(bytes);
  if (!blk) {
    return Errorf(sclSystemError,
                  "sclMemAlloc: heap exhausted: %zu bytes requested, %llu of %llu in use "
                  "(raise STRATACL_HEAP_BYTES)",
                  bytes, (unsigned long long)alloc_.bytes_in_use(), (unsigned long long)capacity_);
  }
  return static_cast<void*>(base_ + blk->offset);
}

Status Heap::release(void* ptr) {
  if (!contains(ptr, 1)) {
    return Errorf(sclInvalidArgument, "sclMemFree: ptr %p is not from sclMemAlloc", ptr);
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto r = alloc_.release(offset_of(ptr));
  if (r) frees_.fetch_add(1, std::memory_order_release);
  if (!r) {
    return Errorf(sclInvalidArgument,
                  "sclMemFree: ptr %p is not the start of a live allocation (double free?)", ptr);
  }
  // Give large freed ranges back to the kernel so RSS falls; small ones stay warm for reuse.
  if (r->punch_size >= RangeAllocator::kLargeBlock) {
    fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(r->punch_offset),
              off_t(r->punch_size));
  }
  return Status::Ok();
}

uint64_t Heap::bytes_to_allocation_end(const void* ptr) const {
  // Every call validates its buffers, mostly the same few: remember the last blocks found, per
  // thread, until a block of this heap is freed (allocations never move or shrink a block).
  struct Cached {
    const Heap* heap = nullptr;
    uint64_t frees = 0, offset = 0, size = 0;
  };
  thread_local Cached cache[4];
  thread_local unsigned next = 0;
  const uint64_t off = offset_of(ptr);
  const uint64_t frees = frees_.load(std::memory_order_acquire);
  for (const Cached& b : cache) {
    if (b.heap == this && b.frees == frees && off - b.offset < b.size)
      return b.offset + b.size - off;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto blk = alloc_.find(off);
  if (!blk) return 0;
  cache[next++ % 4] = Cached{this, frees_.load(std::memory_order_relaxed), blk->offset, blk->size};
  return blk->offset + blk->size - off;
}

Heap::Stats Heap::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Stats{capacity_, alloc_.bytes_in_use(), alloc_.peak_bytes(), alloc_.live_blocks()};
}

}  // namespace stratacl
