#include "fabric/heap.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "core/config.h"
#include "fabric/fork_guard.h"

namespace stratacl {
namespace {
std::atomic<Heap*> g_heap{nullptr}, g_doorbells{nullptr};
std::mutex g_create_mu;

template <typename Create>
Result<Heap*> get_or_create(std::atomic<Heap*>& slot, Create&& create) {
  if (Heap* h = slot.load(std::memory_order_acquire)) return h;
  std::lock_guard<std::mutex> lock(g_create_mu);
  if (Heap* h = slot.load(std::memory_order_acquire)) return h;
  Result<Heap*> h = create();
  if (h.ok()) slot.store(*h, std::memory_order_release);
  return h;
}
}  // namespace

Heap::Heap(UniqueFd fd, char* base, uint64_t capacity, uint64_t nonce, const char* what)
    : fd_(std::move(fd)),
      base_(base),
      capacity_(capacity),
      nonce_(nonce),
      what_(what),
      alloc_(capacity) {}

Heap* existing_heap() { return g_heap.load(std::memory_order_acquire); }

Result<Heap*> Heap::instance() {
  if (Heap* h = existing_heap()) return h;
  SCL_ASSIGN_OR_RETURN(Setting cap, process_setting(Var::kHeapBytes));
  return get_or_create(g_heap, [&]() -> Result<Heap*> {
    Result<Heap*> h = create("stratacl-heap", uint64_t(cap.value), "sclMemAlloc");
    if (h.ok()) install_fork_guard(*h);
    return h;
  });
}

Result<Heap*> Heap::doorbells() {
  return get_or_create(
      g_doorbells, [] { return create("stratacl-doorbells", kDoorbellHeapBytes, "doorbells"); });
}

Result<Heap*> Heap::create(const char* name, uint64_t requested, const char* what) {
  const uint64_t capacity = requested & ~uint64_t(RangeAllocator::kPage - 1);
  UniqueFd fd(memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return SystemErrorf("heap: memfd_create");
  if (ftruncate(fd.get(), off_t(capacity)) != 0) {
    return SystemErrorf("%s heap: ftruncate to %llu bytes", what, (unsigned long long)capacity);
  }
  // Its size is final: no one, a peer included, can shrink the segment under a mapping (SIGBUS
  // in every process) or grow it. F_SEAL_SEAL: no further seals either (a writer-only seal would
  // stop hole punching).
  if (fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return SystemErrorf("heap: sealing the memfd");
  }
  // MAP_NORESERVE: capacity is address space; pages are committed only when touched.
  void* base =
      mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd.get(), 0);
  if (base == MAP_FAILED)
    return SystemErrorf("heap: mmap of %llu bytes", (unsigned long long)capacity);
  // A forked child must not share this mapping (fabric/fork_guard.h).
  if (madvise(base, capacity, MADV_DONTFORK) != 0) {
    const Status s = SystemErrorf("heap: madvise(MADV_DONTFORK)");
    munmap(base, capacity);
    return s;
  }
  uint64_t nonce = 0;
  if (getrandom(&nonce, sizeof nonce, 0) != sizeof nonce) {
    munmap(base, capacity);
    return SystemErrorf("heap: getrandom");
  }
  // Process lifetime: peers map this segment for as long as any communicator lives, and
  // user buffers may outlive every communicator, so the heap is never torn down.
  return new Heap(std::move(fd), static_cast<char*>(base), capacity, nonce, what);
}

Result<UniqueFd> Heap::share_fd(bool writable) const {
  if (writable) {
    UniqueFd dup(fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0));
    if (!dup.valid()) return SystemErrorf("heap: dup");
    return dup;
  }
  // A new open file description, read-only: the peer that receives it cannot map it writable,
  // nor mprotect its mapping to writable, nor add seals.
  const std::string self = "/proc/self/fd/" + std::to_string(fd_.get());
  UniqueFd ro(open(self.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ro.valid()) return SystemErrorf("heap: read-only reopen of %s", self.c_str());
  return ro;
}

Result<void*> Heap::allocate(size_t bytes, bool user) {
  std::lock_guard<std::mutex> lock(mu_);
  auto blk = alloc_.allocate(bytes);
  if (!blk) {
    return Errorf(sclSystemError, "%s: heap exhausted: %zu bytes requested, %llu of %llu in use%s",
                  what_, bytes, (unsigned long long)alloc_.bytes_in_use(),
                  (unsigned long long)capacity_,
                  this == existing_heap() ? " (raise STRATACL_HEAP_BYTES)" : "");
  }
  if (user) user_.insert(blk->offset);
  return static_cast<void*>(base_ + blk->offset);
}

Status Heap::release(void* ptr, bool user) {
  if (!contains(ptr, 1)) {
    return Errorf(sclInvalidArgument, "sclMemFree: ptr %p is not from sclMemAlloc", ptr);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (user && user_.erase(offset_of(ptr)) == 0) {
    return Errorf(sclInvalidArgument,
                  "sclMemFree: ptr %p is not the start of a live sclMemAlloc block (a double free, "
                  "or memory the library holds)",
                  ptr);
  }
  auto r = alloc_.release(offset_of(ptr));
  if (!r) {
    return Errorf(sclInvalidArgument,
                  "sclMemFree: ptr %p is not the start of a live allocation (double free?)", ptr);
  }
  frees_.fetch_add(1, std::memory_order_release);
  // Give large freed ranges back to the kernel so RSS falls; small ones stay warm for reuse.
  if (r->punch_size >= RangeAllocator::kLargeBlock) {
    fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(r->punch_offset),
              off_t(r->punch_size));
    punches_.fetch_add(1, std::memory_order_release);
  }
  return Status::Ok();
}

uint64_t Heap::bytes_to_allocation_end(const void* ptr) const {
  // Every call validates its buffers, mostly the same few: remember the last user blocks found,
  // per thread, until a block of this heap is freed (allocations never move or shrink a block).
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
  if (!blk || !user_.count(blk->offset)) return 0;
  cache[next++ % 4] = Cached{this, frees_.load(std::memory_order_relaxed), blk->offset, blk->size};
  return blk->offset + blk->size - off;
}

Heap::Stats Heap::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Stats{capacity_, alloc_.bytes_in_use(), alloc_.peak_bytes(), alloc_.live_blocks()};
}

}  // namespace stratacl
