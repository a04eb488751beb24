// Whether a wait shares its core with the rank it waits for: the owner's CPU rides on the flag it
// publishes, and only a waiter on that very CPU counts as sharing it (and then yields).
#include <gtest/gtest.h>
#include <sched.h>

#include <cstring>
#include <vector>

#include "sync/doorbells.h"
#include "sync/waiter.h"

namespace stratacl {
namespace {

// Runs `body` with the calling thread pinned to `cpu`, then restores its affinity.
template <typename Body>
void pinned_to(int cpu, Body&& body) {
  cpu_set_t saved, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  body();
  ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
}

// The CPUs this thread may run on.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  sched_getaffinity(0, sizeof set, &set);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

TEST(Waiter, AFlagPublishedFromThisCoreSharesIt) {
  ControlBlock block;
  Doorbell doorbells[sizeof(ControlBlock) / 64 + 1] = {};
  const OwnBlock mine{&block, doorbells};
  EXPECT_FALSE(Waiter::shares_core(block.arrive)) << "a flag never published names no core";
  // Flags in zeroed regions (never constructed) name no core either, CPU 0 included.
  Flag zeroed;
  std::memset(static_cast<void*>(&zeroed), 0, sizeof zeroed);
  EXPECT_FALSE(Waiter::shares_core(zeroed, 0));
  const int cpu = allowed_cpus().front();
  pinned_to(cpu, [&] {
    signal_flag(mine, block.arrive, 7);
    EXPECT_EQ(block.arrive.value.load(), 7u);
    EXPECT_EQ(block.arrive.cpu_plus_one.load(), cpu + 1);
    EXPECT_TRUE(Waiter::shares_core(block.arrive));
  });
}

TEST(Waiter, AFlagPublishedFromAnotherCoreDoesNotShareIt) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "one CPU: every flag is published from it";
  ControlBlock block;
  Doorbell doorbells[sizeof(ControlBlock) / 64 + 1] = {};
  const OwnBlock mine{&block, doorbells};
  pinned_to(cpus[0], [&] { signal_flag(mine, block.progress, 1); });
  pinned_to(cpus[1], [&] { EXPECT_FALSE(Waiter::shares_core(block.progress)); });
  pinned_to(cpus[0], [&] { EXPECT_TRUE(Waiter::shares_core(block.progress)); });
}

}  // namespace
}  // namespace stratacl
