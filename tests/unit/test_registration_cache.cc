// The interval cache behind sclCommRegister: repeated, overlapping and nested registrations,
// reference-counted removal, and coverage by a union of ranges.
#include <gtest/gtest.h>

#include <vector>

#include "fabric/registration_cache.h"

namespace stratacl {
namespace {

TEST(RegistrationCache, RepeatedRangeSharesOneCountedEntry) {
  std::vector<char> buf(4096);
  RegistrationCache cache;
  void* a = cache.add(buf.data(), buf.size());
  void* b = cache.add(buf.data(), buf.size());
  EXPECT_EQ(a, b);
  EXPECT_EQ(cache.entries(), 1u);
  EXPECT_EQ(cache.references(a), 2u);
  EXPECT_TRUE(cache.remove(a));
  EXPECT_TRUE(cache.covers(buf.data(), buf.size()));  // one reference left
  EXPECT_TRUE(cache.remove(b));
  EXPECT_FALSE(cache.covers(buf.data(), buf.size()));
  EXPECT_FALSE(cache.remove(a));  // gone: no longer a handle
  EXPECT_EQ(cache.entries(), 0u);
}

TEST(RegistrationCache, CoversOnlyRegisteredBytes) {
  std::vector<char> buf(4096);
  RegistrationCache cache;
  void* h = cache.add(buf.data() + 100, 1000);
  EXPECT_TRUE(cache.covers(buf.data() + 100, 1000));
  EXPECT_TRUE(cache.covers(buf.data() + 500, 600));   // ends exactly at the range's end
  EXPECT_FALSE(cache.covers(buf.data() + 99, 10));    // starts one byte early
  EXPECT_FALSE(cache.covers(buf.data() + 500, 601));  // one byte past the end
  EXPECT_FALSE(cache.covers(buf.data() + 2000, 1));
  EXPECT_TRUE(cache.remove(h));
}

TEST(RegistrationCache, UnionOfOverlappingRangesCovers) {
  std::vector<char> buf(8192);
  char* p = buf.data();
  RegistrationCache cache;
  void* left = cache.add(p, 3000);
  void* right = cache.add(p + 2000, 3000);  // overlaps left by 1000 bytes
  void* inner = cache.add(p + 100, 50);     // nested in left
  EXPECT_EQ(cache.entries(), 3u);
  EXPECT_TRUE(cache.covers(p, 5000));
  EXPECT_TRUE(cache.covers(p + 2500, 2500));
  EXPECT_FALSE(cache.covers(p, 5001));
  // Without the overlap partner the union has a hole again.
  EXPECT_TRUE(cache.remove(right));
  EXPECT_FALSE(cache.covers(p, 5000));
  EXPECT_TRUE(cache.covers(p, 3000));
  EXPECT_TRUE(cache.remove(left));
  EXPECT_FALSE(cache.covers(p, 3000));
  EXPECT_TRUE(cache.covers(p + 100, 50));  // the nested range stands on its own
  EXPECT_TRUE(cache.remove(inner));
  EXPECT_EQ(cache.entries(), 0u);
}

TEST(RegistrationCache, AdjacentRangesCoverTheirJoin) {
  std::vector<char> buf(4096);
  char* p = buf.data();
  RegistrationCache cache;
  void* a = cache.add(p, 1024);
  void* b = cache.add(p + 1024, 1024);
  EXPECT_TRUE(cache.covers(p + 1000, 100));  // spans the seam
  EXPECT_TRUE(cache.remove(a));
  EXPECT_TRUE(cache.remove(b));
}

TEST(RegistrationCache, ForgottenHitIsNotReused) {
  // The cache remembers the last range that covered a call; removing it must forget that, even
  // while other ranges keep the cache from being empty.
  std::vector<char> buf(4096), other(64);
  RegistrationCache cache;
  void* keep = cache.add(other.data(), other.size());
  void* h = cache.add(buf.data(), 4096);
  EXPECT_TRUE(cache.covers(buf.data() + 10, 10));
  EXPECT_TRUE(cache.remove(h));
  EXPECT_FALSE(cache.covers(buf.data() + 10, 10));
  EXPECT_TRUE(cache.remove(keep));
}

TEST(RegistrationCache, UnknownHandlesAndOverflowAreRefused) {
  RegistrationCache cache;
  int not_a_handle = 0;
  EXPECT_FALSE(cache.remove(&not_a_handle));
  EXPECT_FALSE(cache.remove(nullptr));
  std::vector<char> buf(64);
  void* h = cache.add(buf.data(), buf.size());
  EXPECT_FALSE(cache.covers(buf.data(), SIZE_MAX));  // would wrap the address space
  EXPECT_TRUE(cache.remove(h));
}

}  // namespace
}  // namespace stratacl
