#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "exec/partition.h"

using stratacl::partition;
using stratacl::Range;

TEST(Partition, CoversEverythingInOrderWithoutGaps) {
  for (size_t es : {1, 2, 4, 8}) {
    for (int parts : {1, 2, 3, 4, 5, 7, 8, 64}) {
      for (size_t count : {0ul, 1ul, 7ul, 15ul, 16ul, 17ul, 4097ul, 1048579ul}) {
        size_t next = 0;
        for (int i = 0; i < parts; ++i) {
          Range r = partition(count, es, parts, i);
          ASSERT_EQ(r.begin, next) << count << " " << parts << " " << i;
          ASSERT_GE(r.end, r.begin);
          next = r.end;
        }
        EXPECT_EQ(next, count);
      }
    }
  }
}

TEST(Partition, BoundariesAre64ByteAligned) {
  for (size_t es : {1, 2, 4, 8}) {
    for (int parts : {2, 3, 5, 8}) {
      for (int i = 0; i < parts; ++i) {
        Range r = partition(1000003, es, parts, i);
        EXPECT_EQ(r.begin * es % 64, 0u);
      }
    }
  }
}

TEST(Partition, BalancedByBytesWithinOneUnit) {
  for (size_t es : {1, 2, 4, 8}) {
    for (int parts : {2, 3, 4, 5, 7, 8}) {
      for (size_t count : {4097ul, 1048579ul, 123456ul}) {
        size_t lo = ~0ul, hi = 0;
        for (int i = 0; i < parts; ++i) {
          size_t bytes = partition(count, es, parts, i).size() * es;
          lo = std::min(lo, bytes);
          hi = std::max(hi, bytes);
        }
        EXPECT_LE(hi - lo, 64u) << "es " << es << " parts " << parts << " count " << count;
      }
    }
  }
}

TEST(Partition, SubRangeIsShifted) {
  Range r = partition(Range{1000, 2000}, 4, 2, 1);
  EXPECT_EQ(r.end, 2000u);
  EXPECT_GE(r.begin, 1000u);
  EXPECT_EQ(partition(Range{1000, 2000}, 4, 2, 0).end, r.begin);
}

TEST(Partition, BadArgumentsGiveEmpty) {
  EXPECT_EQ(partition(100, 4, 0, 0).size(), 0u);
  EXPECT_EQ(partition(100, 4, 2, 2).size(), 0u);
  EXPECT_EQ(partition(100, 4, 2, -1).size(), 0u);
}

// Weighted parts: items in order, no gaps, and every part within one item of the mean weight,
// for skewed lists (hot experts, alltoallv skew) as well as even ones.
TEST(PartitionWeighted, EveryPartWithinOneItemOfTheMean) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const size_t items = rng() % 300;
    std::vector<uint64_t> prefix{0};
    uint64_t heaviest = 0;
    for (size_t i = 0; i < items; ++i) {
      // Mostly light items, some 1000x heavier, some empty.
      const uint64_t w = rng() % 10 == 0  ? 1000 * (1 + rng() % 100)
                         : rng() % 3 == 0 ? 0
                                          : rng() % 100;
      heaviest = std::max(heaviest, w);
      prefix.push_back(prefix.back() + w);
    }
    const double total = double(prefix.back());
    for (int parts : {1, 2, 3, 5, 8, 16}) {
      size_t next = 0;
      for (int i = 0; i < parts; ++i) {
        Range r = stratacl::partition_weighted(prefix, parts, i);
        ASSERT_EQ(r.begin, next);
        ASSERT_LE(r.begin, r.end);
        next = r.end;
        const double load = double(prefix[r.end] - prefix[r.begin]);
        EXPECT_LE(std::abs(load - total / parts), double(heaviest) + 1.0)
            << "trial " << trial << " part " << i << " of " << parts;
      }
      EXPECT_EQ(next, items);
    }
  }
}

TEST(PartitionWeighted, EqualItemsSplitEvenly) {
  std::vector<uint64_t> prefix(1001);
  for (size_t i = 0; i < prefix.size(); ++i) prefix[i] = i * 14336;  // 1000 bf16 rows of 7168
  for (int parts : {2, 3, 7}) {
    size_t lo = SIZE_MAX, hi = 0;
    for (int i = 0; i < parts; ++i) {
      const size_t n = stratacl::partition_weighted(prefix, parts, i).size();
      lo = std::min(lo, n), hi = std::max(hi, n);
    }
    EXPECT_LE(hi - lo, 1u) << parts;
  }
}
