// net::Topology: the layouts the hierarchy takes as they are, and the network nodes any other is
// cut into.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "net/topology.h"

using namespace stratacl;
using namespace stratacl::net;

TEST(Topology, HostsHoldConsecutiveRanksAlike) {
  Result<Topology> t = Topology::of({7, 7, 9, 9, 4, 4}, 3);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->hosts, 3);
  EXPECT_EQ(t->per_host, 2);
  EXPECT_EQ(t->host, 1);
  EXPECT_EQ(t->local, 1);
  EXPECT_EQ(t->world_of(2, 1), 5);
  Result<Topology> uneven = Topology::of({1, 1, 2}, 0);
  ASSERT_FALSE(uneven.ok());
  EXPECT_NE(uneven.status().message().find("host 0 with 2 of them and host 1 with 1"),
            std::string::npos)
      << uneven.status().message();
  Result<Topology> interleaved = Topology::of({1, 2, 1, 2}, 0);
  ASSERT_FALSE(interleaved.ok());
  EXPECT_NE(interleaved.status().message().find("rank 1 is not numbered"), std::string::npos);
}

// Topology::nodes: the hosts as they are where of() takes them; a layout whose runs of one host's
// consecutive ranks have no common divisor above 1 with every rank its own node, which of() then
// takes as hosts of one rank.
TEST(Topology, IrregularLayoutsRunWithEveryRankItsOwnNode) {
  const std::vector<uint64_t> regular = {7, 7, 9, 9, 4, 4};
  EXPECT_EQ(Topology::nodes(regular), regular);
  EXPECT_TRUE(Topology::nodes({}).empty());
  EXPECT_FALSE(Topology::of({}, 0).ok());
  for (const std::vector<uint64_t>& irregular :
       {std::vector<uint64_t>{1, 1, 2}, {1, 2, 1, 2}, {5, 5, 5, 6, 6, 7}, {5, 5, 6, 6, 6}}) {
    const std::vector<uint64_t> nodes = Topology::nodes(irregular);
    ASSERT_EQ(nodes.size(), irregular.size());
    for (size_t r = 0; r < nodes.size(); ++r) EXPECT_EQ(nodes[r], r);
    Result<Topology> t = Topology::of(nodes, 1);
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_EQ(t->hosts, int(irregular.size()));
    EXPECT_EQ(t->per_host, 1);
    EXPECT_EQ(t->host, 1);
  }
}

// Topology::nodes: where runs of one host's consecutive ranks share a divisor, nodes of that many
// ranks, numbered in rank order; a node never spans two hosts.
TEST(Topology, UnevenRunsCutIntoNodesOfTheirCommonDivisor) {
  const struct {
    std::vector<uint64_t> hosts, nodes;
  } cases[] = {
      {{5, 5, 5, 5, 6, 6}, {0, 0, 1, 1, 2, 2}},                    // 4 + 2 ranks
      {{5, 5, 6, 6, 5, 5, 6, 6}, {0, 0, 1, 1, 2, 2, 3, 3}},        // halves of 2 hosts x 4 in turn
      {{5, 5, 5, 6, 6, 6, 5, 5, 5}, {0, 0, 0, 1, 1, 1, 2, 2, 2}},  // 6 + 3, in runs of 3
      {{5, 5, 5, 5, 5, 5, 6, 6, 6, 6}, {0, 0, 1, 1, 2, 2, 3, 3, 4, 4}},  // 6 + 4
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Topology::nodes(c.hosts), c.nodes);
    Result<Topology> t = Topology::of(c.nodes, int(c.nodes.size()) - 1);
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_EQ(t->hosts * t->per_host, int(c.nodes.size()));
  }
}
