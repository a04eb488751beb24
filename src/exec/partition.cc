#include "exec/partition.h"

#include <algorithm>

namespace stratacl {

Range partition(size_t count, size_t elem_size, int parts, int index) {
  if (parts <= 0 || index < 0 || index >= parts || elem_size == 0) return {};
  const size_t unit = elem_size >= kPartitionAlignBytes ? 1 : kPartitionAlignBytes / elem_size;
  const size_t units = count / unit;  // the sub-unit tail (count % unit) joins the last part
  const size_t base = units / size_t(parts), extra = units % size_t(parts);
  // Parts [0, extra) get base+1 units. The tail joins the last part, which has only base units
  // whenever extra > 0, keeping the spread within one unit.
  auto start = [&](size_t i) { return (i * base + (i < extra ? i : extra)) * unit; };
  Range r{start(size_t(index)), start(size_t(index) + 1)};
  if (index == parts - 1) r.end = count;
  if (r.begin > count) r.begin = count;
  if (r.end > count) r.end = count;
  return r;
}

Range partition_weighted(std::span<const uint64_t> prefix, int parts, int index) {
  if (prefix.empty() || parts <= 0 || index < 0 || index >= parts) return {};
  const size_t items = prefix.size() - 1;
  const unsigned __int128 total = prefix.back();
  // The first item whose prefix reaches part i's share (128-bit: weights may be byte counts).
  auto start = [&](int i) -> size_t {
    if (i == 0) return 0;
    if (i == parts) return items;
    const uint64_t target = uint64_t((total * unsigned(i) + unsigned(parts) - 1) / unsigned(parts));
    return size_t(std::lower_bound(prefix.begin(), prefix.end() - 1, target) - prefix.begin());
  };
  return Range{start(index), start(index + 1)};
}

}  // namespace stratacl
