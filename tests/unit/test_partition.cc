#include <gtest/gtest.h>

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
