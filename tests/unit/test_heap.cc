// The process heap: allocation from the memfd, validation helpers, and hole punching on free.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>

#include "fabric/heap.h"

using namespace stratacl;

namespace {
// Bytes the heap's memfd really holds (pages touched and not punched).
uint64_t resident_bytes(const Heap* h) {
  struct stat st;
  EXPECT_EQ(fstat(h->fd(), &st), 0);
  return uint64_t(st.st_blocks) * 512;
}
}  // namespace

TEST(Heap, AllocationsAreInsideAndAligned) {
  Result<Heap*> heap = Heap::instance();
  ASSERT_TRUE(heap.ok()) << heap.status().message();
  Heap* h = *heap;
  Result<void*> a = h->allocate(100, /*user=*/true), b = h->allocate(1 << 20, /*user=*/true);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(h->contains(*a, 100));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*a) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*b) % 4096, 0u);
  EXPECT_GE(h->bytes_to_allocation_end(*a), 100u);
  EXPECT_EQ(h->bytes_to_allocation_end(static_cast<char*>(*b) + (1 << 20) - 1), 1u);
  int local = 0;
  EXPECT_FALSE(h->contains(&local, sizeof local));
  EXPECT_TRUE(h->release(*a, /*user=*/true).ok());
  EXPECT_TRUE(h->release(*b, /*user=*/true).ok());
  EXPECT_EQ(h->release(*b).code(), sclInvalidArgument);  // double free
}

// The library's own blocks share the heap: a user's buffer never lies in one, nor does a user's
// release free one.
TEST(Heap, TheLibrarysBlocksAreNotTheUsers) {
  Heap* h = *Heap::instance();
  Result<void*> mine = h->allocate(4096);
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(h->bytes_to_allocation_end(*mine), 0u);
  EXPECT_EQ(h->release(*mine, /*user=*/true).code(), sclInvalidArgument);
  EXPECT_TRUE(h->release(*mine).ok());
}

TEST(Heap, FreeingLargeBlocksReturnsTheirPages) {
  Heap* h = *Heap::instance();
  const uint64_t before = resident_bytes(h);
  Result<void*> big = h->allocate(64 << 20);
  ASSERT_TRUE(big.ok());
  std::memset(*big, 1, 64 << 20);  // fault every page in
  EXPECT_GE(resident_bytes(h), before + (60 << 20));
  ASSERT_TRUE(h->release(*big).ok());
  EXPECT_LE(resident_bytes(h), before + (1 << 20)) << "freed pages were not punched";
}

TEST(Heap, ExhaustionIsAnErrorNotACrash) {
  Heap* h = *Heap::instance();
  Result<void*> huge = h->allocate(h->capacity() + 1);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("STRATACL_HEAP_BYTES"), std::string::npos);
}
