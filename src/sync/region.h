// Typed published regions. A control block is the core lines (ControlBlock) followed by one
// region per protocol that publishes more than a descriptor: point-to-point channels, alltoallv
// counts, the split announcement, the CMA verdict, the settings every rank must share, and
// whatever comes next (MoE routing). Each protocol declares its own struct, or an array of them
// with one entry per rank, in the layer that owns it; the communicator lays the regions out in a
// fixed order, so every rank computes the same offsets from the rank count. sync/ knows nothing
// of what the regions hold.
#pragma once

#include <cstddef>
#include <type_traits>

#include "sync/control_block.h"

namespace stratacl {

template <typename T>
class Region {
 public:
  Region() = default;
  // The region's first entry in block `cb` (owner: writable; peer: read-only); a region declared
  // with one entry per rank is indexed by rank from there.
  T* in(ControlBlock* cb) const {
    return reinterpret_cast<T*>(reinterpret_cast<char*>(cb) + offset_);
  }
  const T* in(const ControlBlock* cb) const {
    return reinterpret_cast<const T*>(reinterpret_cast<const char*>(cb) + offset_);
  }

 private:
  friend class RegionLayout;
  explicit Region(size_t offset) : offset_(offset) {}
  size_t offset_ = 0;
};

class RegionLayout {
 public:
  // Regions start after the core lines, each on a cache line of its own.
  template <typename T>
  Region<T> add(size_t count = 1) {
    // A block starts zeroed, and zero must be each region's initial state: its types hold plain
    // data and atomics, nothing with a constructor that must run.
    static_assert(std::is_standard_layout_v<T> && std::is_trivially_destructible_v<T>);
    const Region<T> r(end_);
    end_ = round_up(end_ + sizeof(T) * count);
    return r;
  }
  size_t total_bytes() const { return end_; }
  size_t lines() const { return end_ / 64; }

 private:
  static size_t round_up(size_t b) { return (b + 63) / 64 * 64; }
  size_t end_ = round_up(sizeof(ControlBlock));
};

}  // namespace stratacl
