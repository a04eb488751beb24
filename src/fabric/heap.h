// The process heaps: registration-on-allocation. A heap is one memfd, sized sparse to its
// capacity, sealed against shrinking and growing, and mapped MAP_SHARED once. Every communicator
// passes its fd to the local peers at init, so any allocation in it is addressable by every peer
// as {rank, offset}, with no per-buffer or per-call registration. The segment has no name: it
// dies with the last process holding it.
//
// There are two per process:
//  - the data heap (sclMemAlloc, control blocks, staging areas): peers get a read-only reopen of
//    its memfd and map it PROT_READ, so no peer, buggy or hostile, can write our buffers;
//  - the doorbell heap: a small one for the only memory peers write, the futex sleeper counts
//    of our control blocks (sync/doorbells.h).
// The seals mean a peer's ftruncate can no longer make every process mapping the heap die of
// SIGBUS; hole punching, which gives freed pages back, still works under them. The mappings are
// MADV_DONTFORK (fabric/fork_guard.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_set>

#include "core/status.h"
#include "core/unique_fd.h"
#include "fabric/range_allocator.h"

namespace stratacl {

class Heap {
 public:
  // The data heap, created on first use (first sclMemAlloc or first communicator).
  static Result<Heap*> instance();
  // The doorbell heap, created with the data heap's first communicator.
  static Result<Heap*> doorbells();

  // `user`: a block handed to the user (sclMemAlloc), which only a user's release may free and
  // only a user's buffer may lie in. The library's own blocks (control blocks, staging areas,
  // scratch) share the heap, so a user's stale or guessed pointer must not reach them.
  Result<void*> allocate(size_t bytes, bool user = false);
  Status release(void* ptr, bool user = false);

  char* base() const { return base_; }
  uint64_t capacity() const { return capacity_; }
  uint64_t nonce() const { return nonce_; }  // random identity, lets peers dedupe mappings
  int fd() const { return fd_.get(); }
  // The descriptor a peer maps: a read-only reopen of the memfd, or (doorbells) the memfd itself.
  Result<UniqueFd> share_fd(bool writable) const;

  // True when [ptr, ptr+bytes) lies inside the heap's address range.
  bool contains(const void* ptr, size_t bytes) const {
    auto p = reinterpret_cast<uintptr_t>(ptr), b = reinterpret_cast<uintptr_t>(base_);
    return p >= b && p - b <= capacity_ && bytes <= capacity_ - (p - b);
  }
  uint64_t offset_of(const void* ptr) const {
    return reinterpret_cast<uintptr_t>(ptr) - reinterpret_cast<uintptr_t>(base_);
  }
  // When ptr is inside the heap: bytes from ptr to the end of its user block (0 if the address
  // is in none). Used to reject buffers that run past their allocation.
  uint64_t bytes_to_allocation_end(const void* ptr) const;

  // How many times a freed range went back to the kernel (hole punched). Its pages are new on
  // the next touch, so a network registration made before is stale (net/registrations.h).
  uint64_t punches() const { return punches_.load(std::memory_order_acquire); }

  struct Stats {
    uint64_t capacity, in_use, peak, live_blocks;
  };
  Stats stats() const;

 private:
  Heap(UniqueFd fd, char* base, uint64_t capacity, uint64_t nonce, const char* what);
  static Result<Heap*> create(const char* name, uint64_t capacity, const char* what);

  UniqueFd fd_;
  char* base_;
  uint64_t capacity_;
  uint64_t nonce_;
  const char* what_;  // "sclMemAlloc" or "doorbells", for messages
  mutable std::mutex mu_;
  // Frees so far, written under mu_: a thread's cached block lookups stay valid while it holds.
  std::atomic<uint64_t> frees_{0};
  std::atomic<uint64_t> punches_{0};
  RangeAllocator alloc_;
  std::unordered_set<uint64_t> user_;  // offsets of the user's blocks, under mu_
};

// Returns the data heap if it already exists, without creating it (to classify buffers).
Heap* existing_heap();

// Capacity of the doorbell heap: 4 bytes per control-block line, for every communicator alive.
constexpr uint64_t kDoorbellHeapBytes = 64ull << 20;

}  // namespace stratacl
