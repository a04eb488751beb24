#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "fabric/range_allocator.h"

using stratacl::RangeAllocator;

namespace {
constexpr uint64_t kCap = 64ull << 20;

// Checks that no two live blocks overlap and every block is inside the capacity.
void expect_disjoint(const std::map<uint64_t, uint64_t>& live) {
  uint64_t end = 0;
  for (auto [off, size] : live) {
    EXPECT_GE(off, end) << "block at " << off << " overlaps the previous one";
    end = off + size;
    EXPECT_LE(end, kCap);
  }
}
}  // namespace

TEST(RangeAllocator, AlignsSmallToCacheLineAndLargeToPage) {
  RangeAllocator a(kCap);
  for (uint64_t bytes : {1ull, 63ull, 64ull, 65ull, 1000ull, 65535ull}) {
    auto b = a.allocate(bytes);
    ASSERT_TRUE(b);
    EXPECT_EQ(b->offset % 64, 0u);
    EXPECT_GE(b->size, bytes);
  }
  for (uint64_t bytes : {65536ull, 65537ull, 1ull << 20, (1ull << 20) + 3}) {
    auto b = a.allocate(bytes);
    ASSERT_TRUE(b);
    EXPECT_EQ(b->offset % 4096, 0u) << bytes;
    EXPECT_EQ(b->size % 4096, 0u);
  }
}

TEST(RangeAllocator, ExhaustionAndZero) {
  RangeAllocator a(1 << 20);
  EXPECT_FALSE(a.allocate((1 << 20) + 1));
  auto all = a.allocate(1 << 20);
  ASSERT_TRUE(all);
  EXPECT_FALSE(a.allocate(1));
  ASSERT_TRUE(a.release(all->offset));
  EXPECT_TRUE(a.allocate(0));  // zero bytes still gives a distinct block
}

TEST(RangeAllocator, DoubleFreeAndInteriorFreeAreRejected) {
  RangeAllocator a(kCap);
  auto b = a.allocate(4096);
  ASSERT_TRUE(b);
  EXPECT_FALSE(a.release(b->offset + 64));  // not the start of a block
  EXPECT_TRUE(a.release(b->offset));
  EXPECT_FALSE(a.release(b->offset));  // double free
  EXPECT_EQ(a.bytes_in_use(), 0u);
}

TEST(RangeAllocator, CoalescesBackToOneRange) {
  RangeAllocator a(kCap);
  std::vector<uint64_t> offs;
  for (int i = 0; i < 100; ++i) offs.push_back(a.allocate(1000 + i * 97)->offset);
  std::mt19937 rng(7);
  std::shuffle(offs.begin(), offs.end(), rng);
  for (uint64_t o : offs) ASSERT_TRUE(a.release(o));
  EXPECT_EQ(a.free_ranges(), 1u);
  EXPECT_EQ(a.bytes_in_use(), 0u);
  EXPECT_TRUE(a.allocate(kCap));  // the whole capacity is one block again
}

TEST(RangeAllocator, FindLocatesContainingBlock) {
  RangeAllocator a(kCap);
  auto b = a.allocate(10000);
  ASSERT_TRUE(b);
  auto f = a.find(b->offset + 9999);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->offset, b->offset);
  EXPECT_FALSE(a.find(b->offset + b->size));
}

TEST(RangeAllocator, PunchRangeCoversOnlyFreedPages) {
  RangeAllocator a(kCap);
  auto x = a.allocate(1 << 20), y = a.allocate(1 << 20);
  ASSERT_TRUE(x && y);
  auto r = a.release(x->offset);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->punch_offset, x->offset);
  EXPECT_EQ(r->punch_size, x->size);
}

TEST(RangeAllocator, RandomisedFragmentationNeverOverlaps) {
  RangeAllocator a(kCap);
  std::mt19937_64 rng(42);
  std::map<uint64_t, uint64_t> live;
  uint64_t expect_in_use = 0;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      uint64_t bytes = (rng() % 4 == 0) ? rng() % (1 << 20) : rng() % 4096;
      auto b = a.allocate(bytes);
      if (!b) continue;
      live[b->offset] = b->size;
      expect_in_use += b->size;
    } else {
      auto it = std::next(live.begin(), long(rng() % live.size()));
      ASSERT_TRUE(a.release(it->first));
      expect_in_use -= it->second;
      live.erase(it);
    }
    ASSERT_EQ(a.bytes_in_use(), expect_in_use);
  }
  expect_disjoint(live);
  EXPECT_GE(a.peak_bytes(), a.bytes_in_use());
}
