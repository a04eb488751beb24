// The size rules of the algorithms across hosts (src/hier), which every rank must apply alike.
#include <gtest/gtest.h>

#include "hier/hierarchical.h"

namespace stratacl::hier {
namespace {

net::Topology hosts(int h, int per_host) { return net::Topology{h, per_host, 0, 0}; }

// A broadcast is large enough to split over the rails from a block of 128 KiB per rail: never
// with one rank per host; the count's tail below L elements does not count. Whether its rail
// transfers also go one-sided, the other condition, is the hosts test's (tests/mp/test_hosts.cc),
// which broadcasts sizes on both sides of both at 2 and 4 ranks per host.
TEST(Hier, BroadcastSplitsOverTheRailsFromBlocksOf128KiB) {
  EXPECT_FALSE(broadcast_splits(hosts(2, 1), size_t(1) << 30, 1));
  EXPECT_FALSE(broadcast_splits(hosts(2, 2), (256 << 10) - 1, 1));
  EXPECT_TRUE(broadcast_splits(hosts(2, 2), 256 << 10, 1));
  EXPECT_TRUE(broadcast_splits(hosts(2, 2), (384 << 10) + 1, 1));
  EXPECT_FALSE(broadcast_splits(hosts(2, 4), (384 << 10) + 1, 1));
  EXPECT_FALSE(broadcast_splits(hosts(2, 4), (512 << 10) - 1, 1));
  EXPECT_TRUE(broadcast_splits(hosts(2, 4), 512 << 10, 1));
  EXPECT_TRUE(broadcast_splits(hosts(2, 4), (512 << 10) + 3, 1));
  EXPECT_TRUE(broadcast_splits(hosts(3, 2), 64 << 10, 4));
  EXPECT_FALSE(broadcast_splits(hosts(3, 2), (64 << 10) - 1, 4));
  EXPECT_FALSE(broadcast_splits(hosts(2, 3), 1, 1));
}

}  // namespace
}  // namespace stratacl::hier
