// Work partitioning: pure functions, unit-tested without processes. Work is cut by bytes, never by
// peer count, so every rank and every worker carries the same load, uneven counts included.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace stratacl {

struct Range {
  size_t begin = 0, end = 0;  // element indices, half-open
  size_t size() const { return end - begin; }
  bool operator==(const Range&) const = default;
};

constexpr size_t kPartitionAlignBytes = 64;

// Part `index` of `parts` contiguous parts of `count` elements of `elem_size` bytes. Boundaries
// fall on 64-byte multiples (elem_size divides 64 for every dtype); whole 64-byte units are dealt
// so that part sizes differ by at most one unit, and the sub-unit tail goes to a part that got
// one unit fewer, so no part exceeds another by more than 64 bytes.
Range partition(size_t count, size_t elem_size, int parts, int index);

// Offsets of part `index` within `r` (a sub-range): partition applied to r.size() then shifted.
inline Range partition(Range r, size_t elem_size, int parts, int index) {
  Range p = partition(r.size(), elem_size, parts, index);
  return Range{r.begin + p.begin, r.begin + p.end};
}

// Part `index` of `parts` of a list of items of uneven weight (rows of hot and cold experts,
// alltoallv blocks of skewed sizes): prefix[i] is the weight of items [0, i), so prefix holds
// items + 1 non-decreasing entries from 0. Part i starts at the first item whose prefix reaches
// i * total / parts, so every part's weight is within one item of total / parts.
Range partition_weighted(std::span<const uint64_t> prefix, int parts, int index);

}  // namespace stratacl
