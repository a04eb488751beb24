// Best-fit range allocator over [0, capacity) with coalescing. Its metadata lives in ordinary
// process memory, never in the shared heap: peers can map and write our heap, so nothing there
// may be trusted, and keeping headers out of the heap lets frees punch whole pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace stratacl {

class RangeAllocator {
 public:
  static constexpr uint64_t kMinAlign = 64;  // a cache line: no false sharing across buffers
  static constexpr uint64_t kLargeBlock = 64 << 10;  // large blocks get page alignment
  static constexpr uint64_t kPage = 4096;

  explicit RangeAllocator(uint64_t capacity);

  struct Block {
    uint64_t offset, size;
  };
  // Returns the offset of a block of at least `bytes` (rounded up), or nullopt when full.
  std::optional<Block> allocate(uint64_t bytes);
  // Frees the block that starts at `offset`. Returns the page-aligned interior of the free
  // range it joined (for hole punching), or nullopt if `offset` is not an allocated block.
  struct FreeResult {
    uint64_t punch_offset = 0, punch_size = 0;
  };
  std::optional<FreeResult> release(uint64_t offset);
  // The allocated block containing `offset`, if any.
  std::optional<Block> find(uint64_t offset) const;

  uint64_t capacity() const { return capacity_; }
  uint64_t bytes_in_use() const { return in_use_; }
  uint64_t peak_bytes() const { return peak_; }
  size_t free_ranges() const { return by_offset_.size(); }
  size_t live_blocks() const { return used_.size(); }

 private:
  void insert_free(uint64_t offset, uint64_t size);
  void erase_free(std::map<uint64_t, uint64_t>::iterator it);

  uint64_t capacity_;
  uint64_t in_use_ = 0, peak_ = 0;
  std::map<uint64_t, uint64_t> by_offset_;           // free: offset -> size
  std::set<std::pair<uint64_t, uint64_t>> by_size_;  // free: (size, offset), for best fit
  std::map<uint64_t, uint64_t> used_;                // allocated: offset -> size
};

}  // namespace stratacl
