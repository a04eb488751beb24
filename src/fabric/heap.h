// The process heap: registration-on-allocation. One memfd per process, sized sparse to the heap
// capacity and mapped MAP_SHARED once. Every communicator passes this fd to its local peers at
// init, so any allocation in it is addressable by every peer as {rank, offset} with no per-buffer
// or per-call registration. The segment has no name: it dies with the last process holding it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "core/status.h"
#include "core/unique_fd.h"
#include "fabric/range_allocator.h"

namespace stratacl {

class Heap {
 public:
  // The process heap, created on first use (first sclMemAlloc or first communicator).
  static Result<Heap*> instance();

  Result<void*> allocate(size_t bytes);
  Status release(void* ptr);

  char* base() const { return base_; }
  uint64_t capacity() const { return capacity_; }
  uint64_t nonce() const { return nonce_; }  // random identity, lets peers dedupe mappings
  int fd() const { return fd_.get(); }

  // True when [ptr, ptr+bytes) lies inside the heap's address range.
  bool contains(const void* ptr, size_t bytes) const {
    auto p = reinterpret_cast<uintptr_t>(ptr), b = reinterpret_cast<uintptr_t>(base_);
    return p >= b && p - b <= capacity_ && bytes <= capacity_ - (p - b);
  }
  uint64_t offset_of(const void* ptr) const {
    return reinterpret_cast<uintptr_t>(ptr) - reinterpret_cast<uintptr_t>(base_);
  }
  // When ptr is inside the heap: bytes from ptr to the end of its allocation (0 if the address
  // is in no live allocation). Used to reject buffers that run past their allocation.
  uint64_t bytes_to_allocation_end(const void* ptr) const;

  struct Stats {
    uint64_t capacity, in_use, peak, live_blocks;
  };
  Stats stats() const;

 private:
  Heap(UniqueFd fd, char* base, uint64_t capacity, uint64_t nonce);
  static Result<Heap*> create();

  UniqueFd fd_;
  char* base_;
  uint64_t capacity_;
  uint64_t nonce_;
  mutable std::mutex mu_;
  // Frees so far, written under mu_: a thread's cached block lookups stay valid while it holds.
  std::atomic<uint64_t> frees_{0};
  RangeAllocator alloc_;
};

// Returns the heap if it already exists, without creating it (for classification of buffers).
Heap* existing_heap();

}  // namespace stratacl
