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

// A local allgather or reduce-scatter takes every host's run in one step, but where a round of
// the staging area would not hold one element of each of the step's blocks: then as many runs
// as it holds, at least one. No staging (the round unbounded) and the default 32 MiB take all.
TEST(Hier, LocalStepsTakeEveryRunThatTheStagingRoundHolds) {
  const uint64_t unbounded = ~uint64_t(0), smallest = 64 << 10;
  EXPECT_EQ(runs_per_step(unbounded, 48, 8, 8), 48);
  EXPECT_EQ(runs_per_step(uint64_t(32) << 20, 48, 8, 8), 48);
  EXPECT_EQ(runs_per_step(smallest, 48, 8, 8), 48);
  EXPECT_EQ(runs_per_step(smallest, 2048, 8, 8), 1024);  // 1024 runs of 8 blocks of 8 bytes
  EXPECT_EQ(runs_per_step(smallest, 1024, 8, 8), 1024);
  EXPECT_EQ(runs_per_step(smallest, 2048, 1, 1), 2048);
  EXPECT_EQ(runs_per_step(smallest, 4, 9000, 8), 1);  // not one run's blocks: one run a step
  EXPECT_EQ(runs_per_step(smallest, 9000, 1, 8), 8192);
}

}  // namespace
}  // namespace stratacl::hier
