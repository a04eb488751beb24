#include "fabric/range_allocator.h"

#include <algorithm>

namespace stratacl {
namespace {
uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
}  // namespace

RangeAllocator::RangeAllocator(uint64_t capacity) : capacity_(capacity / kPage * kPage) {
  if (capacity_ > 0) insert_free(0, capacity_);
}

void RangeAllocator::insert_free(uint64_t offset, uint64_t size) {
  by_offset_.emplace(offset, size);
  by_size_.emplace(size, offset);
}

void RangeAllocator::erase_free(std::map<uint64_t, uint64_t>::iterator it) {
  by_size_.erase({it->second, it->first});
  by_offset_.erase(it);
}

std::optional<RangeAllocator::Block> RangeAllocator::allocate(uint64_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes > capacity_) return std::nullopt;
  const uint64_t align = bytes >= kLargeBlock ? kPage : kMinAlign;
  const uint64_t size = round_up(bytes, align >= kPage ? kPage : kMinAlign);
  // Best fit: the smallest free range that holds `size` once its start is aligned. Free range
  // starts are always 64-byte aligned, so only page alignment can need slack.
  for (auto it = by_size_.lower_bound({size, 0}); it != by_size_.end(); ++it) {
    const uint64_t start = it->second, len = it->first;
    const uint64_t aligned = round_up(start, align);
    if (aligned + size > start + len) continue;
    auto fit = by_offset_.find(start);
    erase_free(fit);
    if (aligned > start) insert_free(start, aligned - start);
    if (aligned + size < start + len) insert_free(aligned + size, start + len - aligned - size);
    used_.emplace(aligned, size);
    in_use_ += size;
    if (in_use_ > peak_) peak_ = in_use_;
    return Block{aligned, size};
  }
  return std::nullopt;
}

std::optional<RangeAllocator::FreeResult> RangeAllocator::release(uint64_t offset) {
  auto u = used_.find(offset);
  if (u == used_.end()) return std::nullopt;
  const uint64_t block_lo = u->first, block_hi = u->first + u->second;
  uint64_t start = block_lo, end = block_hi;
  in_use_ -= u->second;
  used_.erase(u);
  // Coalesce with the free neighbours on both sides.
  auto next = by_offset_.lower_bound(start);
  if (next != by_offset_.end() && next->first == end) {
    end += next->second;
    erase_free(next);
  }
  auto prev = by_offset_.lower_bound(start);
  if (prev != by_offset_.begin()) {
    --prev;
    if (prev->first + prev->second == start) {
      start = prev->first;
      erase_free(prev);
    }
  }
  insert_free(start, end - start);
  FreeResult r;
  // Only the pages this block touched: the neighbours' pages were punched when they were freed.
  const uint64_t lo = std::max(round_up(start, kPage), block_lo / kPage * kPage);
  const uint64_t hi = std::min(end / kPage * kPage, round_up(block_hi, kPage));
  if (hi > lo) r = FreeResult{lo, hi - lo};
  return r;
}

std::optional<RangeAllocator::Block> RangeAllocator::find(uint64_t offset) const {
  auto it = used_.upper_bound(offset);
  if (it == used_.begin()) return std::nullopt;
  --it;
  if (offset >= it->first + it->second) return std::nullopt;
  return Block{it->first, it->second};
}

}  // namespace stratacl
