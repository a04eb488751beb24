// The worker team, the copy engine and the cost model, without processes.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "exec/copy_engine.h"
#include "exec/cost_model.h"
#include "exec/executor.h"
#include "exec/team.h"

namespace stratacl {
namespace {

TEST(Team, RunsEveryPartExactlyOnceOnDistinctThreads) {
  for (int size : {1, 2, 3, 5}) {
    Team team(size, SpinPolicy{1000, false});
    for (int parts : {1, 2, 3, 4, 7, 16}) {
      for (int round = 0; round < 50; ++round) {
        std::vector<std::atomic<int>> ran(static_cast<size_t>(parts));
        std::vector<std::thread::id> who(static_cast<size_t>(parts));
        Status s = team.run(parts, [&](int i) {
          ran[size_t(i)].fetch_add(1);
          who[size_t(i)] = std::this_thread::get_id();
          return Status::Ok();
        });
        ASSERT_TRUE(s.ok());
        for (int i = 0; i < parts; ++i) ASSERT_EQ(ran[size_t(i)].load(), 1);
        EXPECT_EQ(who[0], std::this_thread::get_id());  // part 0 runs on the caller
        if (parts >= 2 && size >= 2) {
          EXPECT_NE(who[1], who[0]);
        }
      }
    }
  }
}

TEST(Team, ReturnsAFailingPartsError) {
  Team team(3, SpinPolicy{});
  Status s = team.run(3, [](int i) {
    return i == 2 ? Errorf(sclInternalError, "part %d failed", i) : Status::Ok();
  });
  EXPECT_EQ(s.code(), sclInternalError);
  EXPECT_NE(s.message().find("part 2"), std::string::npos);
  // The team is usable after a failure.
  std::atomic<int> sum{0};
  EXPECT_TRUE(team.run(3,
                       [&](int i) {
                         sum += i;
                         return Status::Ok();
                       })
                  .ok());
  EXPECT_EQ(sum.load(), 3);
}

TEST(Team, AJobStartedInsideAJobRunsInline) {
  Team team(2, SpinPolicy{});
  std::atomic<int> inner{0};
  Status s = team.run(2, [&](int) {
    return team.run(4, [&](int) {
      inner.fetch_add(1);
      return Status::Ok();
    });
  });
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(inner.load(), 8);
}

TEST(Team, HelpersSleepWhenIdleAndWakeForTheNextJob) {
  Team team(2, SpinPolicy{0, false});  // no spinning: every job wakes a sleeping helper
  for (int round = 0; round < 20; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::atomic<int> n{0};
    ASSERT_TRUE(team.run(2,
                         [&](int) {
                           n.fetch_add(1);
                           return Status::Ok();
                         })
                    .ok());
    ASSERT_EQ(n.load(), 2);
  }
}

TEST(CopyEngine, CopiesLandBeforeTheCompletionReturns) {
  Completion done;
  {
    CopyEngine engine(2);
    std::vector<char> src(3 << 20), dst(src.size());
    std::iota(src.begin(), src.end(), 0);
    for (size_t bytes : {size_t(1), size_t(4095), size_t(65536), size_t(1 << 20), src.size()}) {
      std::fill(dst.begin(), dst.end(), 0);
      engine.submit(CopyDescriptor{dst.data(), src.data(), bytes, bytes > 65536, &done});
      done.wait();
      ASSERT_EQ(std::memcmp(dst.data(), src.data(), bytes), 0) << bytes;
      if (bytes < dst.size()) {
        ASSERT_EQ(dst[bytes], 0) << bytes;  // nothing past the end
      }
    }
    // Many small descriptors in flight at once.
    std::fill(dst.begin(), dst.end(), 0);
    for (size_t at = 0; at < src.size(); at += 4096)
      engine.submit(CopyDescriptor{dst.data() + at, src.data() + at, 4096, false, &done});
    done.wait();
    EXPECT_EQ(std::memcmp(dst.data(), src.data(), src.size()), 0);
  }
}

TEST(Executor, SplitCoversTheRangeWithBalancedParts) {
  ExecSettings s;
  s.threads = 3;
  s.min_part_bytes = 0;  // every job uses every worker
  Executor ex(s);
  std::vector<std::atomic<int>> seen(10007);
  std::vector<size_t> sizes(3, 0);
  ASSERT_TRUE(ex.split(seen.size(), 4, [&](int part, Range r) {
                  sizes[size_t(part)] = r.size();
                  for (size_t i = r.begin; i < r.end; ++i) seen[i].fetch_add(1);
                  return Status::Ok();
                }).ok());
  for (auto& v : seen) ASSERT_EQ(v.load(), 1);
  const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
  EXPECT_LE(*hi - *lo, 16u);  // within one 64-byte unit of 4-byte elements
}

TEST(Executor, CopiesWithAndWithoutEngines) {
  for (int engines : {0, 1, 2}) {
    ExecSettings s;
    s.threads = 2;
    s.engines = engines;
    s.min_part_bytes = 0;
    Executor ex(s);
    std::vector<char> src(1 << 20), dst(src.size(), 0);
    std::iota(src.begin(), src.end(), 3);
    ex.copy(dst.data(), src.data(), src.size(), false);
    EXPECT_EQ(dst, src) << engines;
    std::fill(dst.begin(), dst.end(), 0);
    for (size_t at = 0; at < src.size(); at += 65536)
      ex.copy_async(dst.data() + at, src.data() + at, 65536, true);
    ex.drain();
    EXPECT_EQ(dst, src) << engines;
  }
}

TEST(CostModel, PartsPayForTheirWakeUp) {
  const CostModel m = CostModel::for_host(2, 0);
  EXPECT_NEAR(m.host_gbps, 18.1, 0.01);  // the measured two-core figure, by construction
  const size_t min = m.min_part_bytes();
  EXPECT_EQ(m.parts_for(min - 1, 4, min), 1);
  EXPECT_EQ(m.parts_for(2 * min, 4, min), 2);
  EXPECT_EQ(m.parts_for(100 * min, 4, min), 4);
  EXPECT_EQ(m.parts_for(1, 4, 0), 4);  // pinned: every worker
}

TEST(CostModel, AutoThreadsShareTheCoresAndTheBandwidth) {
  const CostModel two = CostModel::for_host(2, 0);
  EXPECT_EQ(two.auto_threads(1, 0), 2);
  for (int ranks : {2, 4, 8}) EXPECT_EQ(two.auto_threads(ranks, 0), 1) << ranks;  // never more
  EXPECT_EQ(two.auto_threads(1, 1), 1);  // an engine takes the second core
  const CostModel sixteen = CostModel::for_host(16, 0);
  // 16 cores scale to 10.9 x (1 + 0.66 x 15) = 119 GB/s: a rank of two gets 6 threads, not 8.
  EXPECT_EQ(sixteen.auto_threads(2, 0), 6);
  EXPECT_EQ(sixteen.auto_threads(8, 0), 2);
  EXPECT_EQ(sixteen.auto_threads(16, 0), 1);
  // A host whose memory saturates early gives fewer threads than cores.
  const CostModel narrow = CostModel::for_host(16, 25.0);
  EXPECT_EQ(narrow.auto_threads(1, 0), 3);
}

}  // namespace
}  // namespace stratacl
