// The agreement on who is gone (sync/agreement.h): ranks as threads over a board in memory,
// killed at random points of the protocol (between two board operations, as a process dies
// between two stores), with random delays between operations. Every rank that finishes must
// return the same set, holding every rank that never took part.
#include <gtest/gtest.h>

#include <atomic>
#include <climits>
#include <deque>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "sync/agreement.h"

using stratacl::Deadline;
using stratacl::RankSet;
using stratacl::Result;
using stratacl::Status;
using stratacl::Vote;
using stratacl::VoteBoard;

namespace {

struct Died {};

// Where votes go. Shared (one host): a vote is visible to all at once and stays. Network
// (across hosts): a vote reaches each rank after its own delay, in order, and the votes still
// on their way from a rank that dies are lost for some ranks, so survivors may have read
// different last votes of it.
struct World {
  World(int n, bool network)
      : n(n),
        network(network),
        votes(size_t(n)),
        dead_at(size_t(n)),
        inbox(size_t(n) * n),
        latest(size_t(n) * n),
        last_at(size_t(n) * n, 0) {
    for (auto& d : dead_at) d = kAlive;
  }
  static constexpr int64_t kAlive = INT64_MAX / 2;
  struct Letter {
    int64_t at;
    Vote vote;
  };
  const int n;
  const bool network;
  std::mutex mu;
  std::vector<std::optional<Vote>> votes;
  std::atomic<int64_t> clock{0};              // board operations so far, all ranks together
  std::vector<std::atomic<int64_t>> dead_at;  // when each rank died (on that clock)
  std::vector<std::deque<Letter>> inbox;      // [observer * n + sender]
  std::vector<std::optional<Vote>> latest;    // [observer * n + sender]
  std::vector<int64_t> last_at;               // [observer * n + sender]: in order

  void publish(int self, const Vote& v, std::mt19937& rng) {
    std::lock_guard<std::mutex> lock(mu);
    if (!network) {
      votes[size_t(self)] = v;
      return;
    }
    for (int o = 0; o < n; ++o) {
      const size_t c = size_t(o * n + self);
      last_at[c] = std::max(last_at[c], clock.load() + int64_t(rng() % unsigned(10 * n)));
      inbox[c].push_back(Letter{last_at[c], v});
    }
  }
  std::optional<Vote> read(int self, int r) {
    std::lock_guard<std::mutex> lock(mu);
    if (!network) return votes[size_t(r)];
    const size_t c = size_t(self * n + r);
    while (!inbox[c].empty() && inbox[c].front().at <= clock.load()) {
      latest[c] = inbox[c].front().vote;
      inbox[c].pop_front();
    }
    return latest[c];
  }
  void die(int r, std::mt19937& rng) {
    std::lock_guard<std::mutex> lock(mu);
    dead_at[size_t(r)] = clock.load();
    for (int o = 0; o < n && network; ++o) {
      if (rng() % 2) inbox[size_t(o * n + r)].clear();
    }
  }
};

// One rank's view: it dies (throws) when its budget of operations runs out, and it sees a death
// only `lag` operations (of anyone) after it happened, as detectors do.
class Board : public VoteBoard {
 public:
  Board(World& w, int self, int budget, unsigned seed, int64_t lag = 0)
      : self_(self), w_(w), budget_(budget), rng_(seed), lag_(lag) {}
  std::optional<Vote> read(int r) override {
    step();
    return w_.read(self_, r);
  }
  bool gone(int r) override {
    step();
    return w_.dead_at[size_t(r)].load() + lag_ <= w_.clock.load();
  }
  Status publish(const Vote& v) override {
    step();
    w_.publish(self_, v, rng_);
    return Status::Ok();
  }
  std::mt19937& rng() { return rng_; }

 private:
  void step() {
    w_.clock++;
    if (budget_ >= 0 && budget_-- == 0) throw Died{};
    if (rng_() % 8 == 0) std::this_thread::yield();
  }
  int self_;
  World& w_;
  int budget_;
  std::mt19937 rng_;
  int64_t lag_;
};

}  // namespace

class AgreementOver : public testing::TestWithParam<bool> {};

TEST_P(AgreementOver, SurvivorsAgreeWhateverDiesWhen) {
  std::mt19937 rng(12345);
  int trials_with_deaths_during = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 2 + int(rng() % 7);
    World world(n, GetParam());
    std::vector<bool> absent(static_cast<size_t>(n),
                             false);  // never take part (dead before the shrink)
    std::vector<int> budget(static_cast<size_t>(n), -1);  // -1: lives
    for (int r = 0; r < n; ++r) {
      const unsigned d = rng() % 10;
      if (d == 0)
        absent[size_t(r)] = true;
      else if (d <= 3)
        budget[size_t(r)] = int(rng() % (d == 1 ? 4 : 6 * n));  // often before voting
    }
    absent[0] = false, budget[0] = -1;  // someone survives
    for (int r = 0; r < n; ++r) {
      if (absent[size_t(r)]) world.dead_at[size_t(r)] = -World::kAlive;
    }
    std::vector<std::optional<RankSet>> result(static_cast<size_t>(n));
    std::vector<char> died(static_cast<size_t>(n), 0);  // one byte each: threads write them
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      if (absent[size_t(r)]) continue;
      RankSet start(n);
      // Some survivors know of some absent ranks from the start (their exclusion list).
      for (int a = 0; a < n; ++a) {
        if (absent[size_t(a)] && rng() % 2) start.add(a);
      }
      const unsigned seed = unsigned(rng());
      const int64_t lag = int64_t(rng() % unsigned(20 * n));
      threads.emplace_back([&, r, start, seed, lag] {
        Board board(world, r, budget[size_t(r)], seed, lag);
        try {
          Result<RankSet> got = agree_on_gone(board, r, start, Deadline::after_ms(20000));
          if (got.ok()) result[size_t(r)] = *got;
        } catch (const Died&) {
          died[size_t(r)] = true;
          world.die(r, board.rng());
        }
      });
    }
    for (std::thread& t : threads) t.join();
    std::optional<RankSet> agreed;
    bool any_died = false;
    for (int r = 0; r < n; ++r) {
      any_died = any_died || died[size_t(r)];
      if (absent[size_t(r)] || died[size_t(r)]) continue;
      ASSERT_TRUE(result[size_t(r)]) << "trial " << trial << ": rank " << r << " failed";
      if (!agreed) agreed = result[size_t(r)];
      EXPECT_EQ(*result[size_t(r)], *agreed) << "trial " << trial << ": rank " << r;
    }
    ASSERT_TRUE(agreed);
    for (int r = 0; r < n; ++r) {
      if (absent[size_t(r)]) {
        EXPECT_TRUE(agreed->has(r)) << "trial " << trial << ": rank " << r;
      } else if (!died[size_t(r)]) {
        // A survivor is never left out: nobody excluded it, and it never died.
        EXPECT_FALSE(agreed->has(r)) << "trial " << trial << ": rank " << r;
      }
    }
    trials_with_deaths_during += any_died;
  }
  EXPECT_GT(trials_with_deaths_during, 50);  // the interesting case was exercised
}

INSTANTIATE_TEST_SUITE_P(SharedMemoryAndNetwork, AgreementOver, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& i) {
                           return i.param ? "Network" : "SharedMemory";
                         });

TEST(Agreement, ADecisionOfARankThatDiedIsAdopted) {
  // Rank 1 decided {2} and died; rank 0, who never saw rank 2 die, adopts it.
  World world(3, false);
  RankSet two(3);
  two.add(2);
  world.votes[1] = Vote{4, true, two};
  std::mt19937 rng(1);
  world.die(1, rng);
  Board board(world, 0, -1, 1);
  Result<RankSet> got = agree_on_gone(board, 0, RankSet(3), Deadline::after_ms(5000));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, two);
}

TEST(Agreement, ARankThatNeitherVotesNorDiesTimesOutNamingIt) {
  World world(3, false);
  RankSet none(3);
  world.votes[1] = Vote{1, false, none};
  Board board(world, 0, -1, 1);
  Result<RankSet> got = agree_on_gone(board, 0, none, Deadline::after_ms(200));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), sclTimeout);
  EXPECT_NE(got.status().message().find("rank 2"), std::string::npos) << got.status().message();
}

TEST(Agreement, RankSetWordsDropRanksPastTheEnd) {
  const uint64_t words[2] = {~uint64_t(0), ~uint64_t(0)};
  RankSet s = RankSet::of_words(70, words);
  EXPECT_EQ(s.count(), 70);
  EXPECT_TRUE(s.has(69));
}
