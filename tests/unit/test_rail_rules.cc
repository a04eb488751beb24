// The rail's rules of choice, each the edges of its cost model, as bench/scale_rules.py applies
// them: when a transfer goes one-sided, when a broadcast goes down the chain of hosts, when an
// alltoall goes in Bruck's rounds and an allreduce in halves, and the rounds of a tree of hosts.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

#include "net/rail.h"

using namespace stratacl::net;

// Rail::one_sided_at: from the threshold; from three senders on, from the threshold over their
// count (rounded up), but not below a quarter of it; never where it is -1. bench/scale_rules.py
// applies the same rule.
TEST(Rail, GoesOneSidedFromLessWhereManySend) {
  const int64_t min = 256 << 10;
  EXPECT_FALSE(Rail::one_sided_at(min, (256 << 10) - 1, 1));
  EXPECT_TRUE(Rail::one_sided_at(min, 256 << 10, 1));
  EXPECT_FALSE(Rail::one_sided_at(min, (256 << 10) - 1, 2));
  EXPECT_TRUE(Rail::one_sided_at(min, 256 << 10, 2));
  EXPECT_FALSE(Rail::one_sided_at(min, 87381, 3));  // 256 KiB / 3 = 87381.3
  EXPECT_TRUE(Rail::one_sided_at(min, 87382, 3));
  EXPECT_FALSE(Rail::one_sided_at(min, (64 << 10) - 1, 4));
  EXPECT_TRUE(Rail::one_sided_at(min, 64 << 10, 4));
  EXPECT_FALSE(Rail::one_sided_at(min, (64 << 10) - 1, 5));  // a quarter, not a fifth
  EXPECT_TRUE(Rail::one_sided_at(min, 64 << 10, 1000));
  EXPECT_FALSE(Rail::one_sided_at(1, 0, 5));  // every transfer of a byte or more, either way
  EXPECT_TRUE(Rail::one_sided_at(1, 1, 1));
  EXPECT_TRUE(Rail::one_sided_at(1, 1, 5));
  for (int senders : {1, 2, 3, 100}) {
    EXPECT_FALSE(Rail::one_sided_at(-1, size_t(1) << 40, senders));
  }
}

// Rail::chain_segments: the chain where its cost model beats the flat broadcast (radix H) or the
// binomial tree (radix 2), never at 2 hosts; at a tie, the other. The sizes the hosts test
// broadcasts (tests/mp/test_hosts.cc) take the counts its comment names: at 3 hosts the flat
// rows of the table below, at 4 and 6 its binomial tree's (from 4 hosts the rail weighs the
// chain against that tree); bench/scale_rules.py applies the same rule.
TEST(Rail, BroadcastsDownTheChainOfHostsWhereItCostsLess) {
  EXPECT_EQ(Rail::chain_segments(2, size_t(1) << 30, 2), 0);
  EXPECT_EQ(Rail::chain_segments(3, 512 << 10, 3), 0);
  EXPECT_EQ(Rail::chain_segments(3, (512 << 10) + 1, 3), 2);
  EXPECT_EQ(Rail::chain_segments(4, 384 << 10, 4), 0);
  EXPECT_EQ(Rail::chain_segments(4, (384 << 10) + 1, 4), 2);
  EXPECT_EQ(Rail::chain_segments(6, 288 << 10, 6), 0);
  EXPECT_EQ(Rail::chain_segments(6, (288 << 10) + 1, 6), 3);
  // The tree's log2 H rounds of one copy cost less than the flat broadcast's H - 1 copies, so
  // the chain takes over later.
  EXPECT_EQ(Rail::chain_segments(4, 1 << 20, 2), 0);
  EXPECT_EQ(Rail::chain_segments(4, (1 << 20) + 1, 2), 4);
  EXPECT_EQ(Rail::chain_segments(6, 640 << 10, 2), 0);
  EXPECT_EQ(Rail::chain_segments(6, (640 << 10) + 1, 2), 4);
  EXPECT_EQ(Rail::chain_segments(4, 16 << 20, 2), 16);
  const size_t sizes[] = {(size_t(384) << 10) + 1, size_t(512) << 10,     (size_t(512) << 10) + 5,
                          (size_t(1) << 20) + 3,   (size_t(3) << 20) + 1, (size_t(4) << 20) + 12};
  const int flat[3][6] = {{0, 0, 2, 3, 5, 6}, {2, 3, 3, 4, 7, 8}, {3, 4, 4, 6, 10, 11}};
  const int tree[2][6] = {{0, 0, 0, 4, 7, 8}, {0, 0, 0, 6, 10, 11}};
  const int hosts[] = {3, 4, 6};
  for (int h = 0; h < 3; ++h) {
    for (int k = 0; k < 6; ++k) {
      EXPECT_EQ(Rail::chain_segments(hosts[h], sizes[k], hosts[h]), flat[h][k])
          << hosts[h] << " hosts, " << sizes[k] << " bytes, flat";
      if (h > 0) {
        EXPECT_EQ(Rail::chain_segments(hosts[h], sizes[k], 2), tree[h - 1][k])
            << hosts[h] << " hosts, " << sizes[k] << " bytes, binomial tree";
      }
    }
  }
  EXPECT_EQ(Rail::chain_segments(3, 16 << 20, 3), 11);
  EXPECT_EQ(Rail::chain_segments(4, 16 << 20, 4), 16);
  EXPECT_EQ(Rail::chain_segments(48, 168 << 10, 48), 0);
  EXPECT_EQ(Rail::chain_segments(48, 169 << 10, 48), 8);
  EXPECT_EQ(Rail::chain_segments(48, size_t(1) << 40, 2), Rail::kChainMaxSegments);
}

// Rail::alltoall_rounds_pay: Bruck's rounds where (M - (H - 1)) L b < (H - 1 - R) C, M the slots
// the R rounds send, C = kAlltoallBytesPerMessageCost; the edges of each case, as
// bench/scale_rules.py applies them. The hosts test's alltoalls of 1000 int32 go in rounds at
// 4 and 6 hosts of one rank and direct at 4 hosts of two (tests/mp/test_hosts.cc).
TEST(Rail, AlltoallsGoInRoundsWhereTheMessagesSavedCostMore) {
  constexpr size_t C = Rail::kAlltoallBytesPerMessageCost;
  EXPECT_FALSE(Rail::alltoall_rounds_pay(2, 1, 1));  // one round of one message: no gain
  EXPECT_FALSE(Rail::alltoall_rounds_pay(3, 1, 1));  // two rounds of one: none either
  EXPECT_TRUE(Rail::alltoall_rounds_pay(4, 1, 1));
  EXPECT_TRUE(Rail::alltoall_rounds_pay(4, 1, C - 1));  // M = 4, R = 2: L b < C
  EXPECT_FALSE(Rail::alltoall_rounds_pay(4, 1, C));
  EXPECT_TRUE(Rail::alltoall_rounds_pay(4, 2, C / 2 - 1));  // two rails share the link
  EXPECT_FALSE(Rail::alltoall_rounds_pay(4, 2, C / 2));
  EXPECT_TRUE(Rail::alltoall_rounds_pay(4, 1, 4000));
  EXPECT_FALSE(Rail::alltoall_rounds_pay(4, 2, 2 * 4000));
  EXPECT_TRUE(Rail::alltoall_rounds_pay(6, 1, 4000));  // M = 7, R = 3: 2 L b < 2 C
  EXPECT_FALSE(Rail::alltoall_rounds_pay(6, 1, C));
  EXPECT_TRUE(Rail::alltoall_rounds_pay(8, 1, 4 * C / 5));  // M = 12, R = 3: 5 L b < 4 C
  EXPECT_FALSE(Rail::alltoall_rounds_pay(8, 1, 4 * C / 5 + 1));
  EXPECT_TRUE(Rail::alltoall_rounds_pay(48, 8, 41 * C / 81 / 8));  // M = 128, R = 6
  EXPECT_FALSE(Rail::alltoall_rounds_pay(48, 8, 41 * C / 81 / 8 + 1));
  EXPECT_FALSE(Rail::alltoall_rounds_pay(48, 1, size_t(1) << 62));  // no overflow
}

// Rail::allreduce_halves_pay: the halves where (H - 1)(H - 2) L b > H (6 R - 2 H + 1) C, R =
// ceil(log2 H), C = kHalvesBytesPerMessageCost; the edges, as bench/scale_rules.py applies them.
// The hosts test's allreduces of 16384 int32 take the halves at 5, 6 and 7 hosts of one rank,
// its 6001 int64 at 6 and 7 only (tests/mp/test_hosts.cc).
TEST(Rail, AllreducesGoInHalvesWhereTheBytesSavedCostMore) {
  constexpr size_t C = Rail::kHalvesBytesPerMessageCost;
  EXPECT_FALSE(Rail::allreduce_halves_pay(2, 1, size_t(1) << 40));  // the same bytes
  EXPECT_FALSE(Rail::allreduce_halves_pay(3, 1, 64 << 10));         // 2 b > 21 C
  EXPECT_FALSE(Rail::allreduce_halves_pay(5, 1, 15 * C / 4));       // 12 b > 45 C
  EXPECT_TRUE(Rail::allreduce_halves_pay(5, 1, 15 * C / 4 + 1));
  EXPECT_TRUE(Rail::allreduce_halves_pay(5, 1, 64 << 10));
  EXPECT_FALSE(Rail::allreduce_halves_pay(6, 1, 34406));  // 20 b > 42 C: b > 34406.4
  EXPECT_TRUE(Rail::allreduce_halves_pay(6, 1, 34407));
  EXPECT_FALSE(Rail::allreduce_halves_pay(6, 2, 17203));  // two rails share the link
  EXPECT_TRUE(Rail::allreduce_halves_pay(6, 2, 17204));
  EXPECT_TRUE(Rail::allreduce_halves_pay(6, 1, 6001 * 8));
  EXPECT_FALSE(Rail::allreduce_halves_pay(5, 1, 6001 * 8));
  EXPECT_FALSE(Rail::allreduce_halves_pay(12, 1, 1787));  // 110 b > 12 C: b > 1787.3
  EXPECT_TRUE(Rail::allreduce_halves_pay(12, 1, 1788));
  EXPECT_TRUE(Rail::allreduce_halves_pay(13, 1, 1));  // 6 R - 2 H + 1 < 0 from here
  EXPECT_TRUE(Rail::allreduce_halves_pay(48, 8, 1));
}

// Rail::tree_rounds: ceil(log_k H), the rounds of a broadcast's tree and a barrier.
TEST(Rail, TreesOfHostsTakeLogRadixRounds) {
  EXPECT_EQ(Rail::tree_rounds(1, 2), 0);
  EXPECT_EQ(Rail::tree_rounds(2, 2), 1);
  EXPECT_EQ(Rail::tree_rounds(4, 2), 2);
  EXPECT_EQ(Rail::tree_rounds(5, 2), 3);
  EXPECT_EQ(Rail::tree_rounds(8, 8), 1);
  EXPECT_EQ(Rail::tree_rounds(9, 8), 2);
  EXPECT_EQ(Rail::tree_rounds(384, 8), 3);
  EXPECT_EQ(Rail::tree_rounds(65536, 65536), 1);
}
