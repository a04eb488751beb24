#include <gtest/gtest.h>

#include <string>

#include "core/hash.h"

using namespace stratacl;

// Published FNV-1a test vectors, and values the library has always computed: some travel
// between ranks, so they may never change.
TEST(Hash, Fnv1aMatchesTheStandardAndTheSharedValues) {
  EXPECT_EQ(fnv1a(kFnvBasis, ""), kFnvBasis);
  EXPECT_EQ(fnv1a(kFnvBasis, "a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a(kFnvBasis, "foobar"), 0x85944171f73967e8ull);
  const std::string foobar = "foobar";
  EXPECT_EQ(fnv1a(kFnvBasis, foobar.data(), foobar.size()), fnv1a(kFnvBasis, foobar));
  EXPECT_EQ(fnv1a(fnv1a(kFnvBasis, "foo"), "bar"), fnv1a(kFnvBasis, "foobar"));
  EXPECT_EQ(fnv1a_byte(fnv1a(kFnvBasis, "fooba"), 'r'), fnv1a(kFnvBasis, "foobar"));

  EXPECT_EQ(fnv1a(kFnvBasisShared, "boot-id/4026531992/4026531839"), 0xdf9b0b580a676237ull);
  uint64_t digest = kFnvBasisShared;
  for (uint64_t v : {uint64_t(7168), uint64_t(8), uint64_t(256), ~uint64_t(0)})
    digest = fnv1a_u64(digest, v);
  EXPECT_EQ(digest, 0x1ad666ea0e1f78acull);
  // Least significant byte first, whatever the host.
  const unsigned char le[8] = {0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01};
  EXPECT_EQ(fnv1a_u64(kFnvBasis, 0x0102030405060708ull), fnv1a(kFnvBasis, le, sizeof le));
}

TEST(Hash, Splitmix64MatchesTheGenerator) {
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafull);  // the generator's first output from seed 0
  EXPECT_EQ(splitmix64(1234567), 0x599ed017fb08fc85ull);
  EXPECT_EQ(splitmix64(41), mix64(41 + kGoldenGamma));
  static_assert(mix64(0) == 0);
}
