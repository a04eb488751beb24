// Heartbeat (net/heartbeat.h): liveness and failure news between two heartbeats in one process,
// each on a hub of its own (net/heartbeat_hub.h) as two processes would be; and communicators
// sharing their hubs.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "net/heartbeat.h"

using namespace stratacl;
using namespace stratacl::net;

namespace {

// Two heartbeats, ranks 0 and 1 of a pretend communicator, each watching the other, each on a
// hub of its own (or on the hubs given: other communicators of the same two "processes");
// started only when asked, so a test can leave one silent.
struct Pair {
  std::shared_ptr<HeartbeatHub> hubs[2];
  std::unique_ptr<Heartbeat> hb[2];
  std::vector<std::vector<uint8_t>> names;
  uint64_t nonce = 0x5eed;
  size_t record_bytes = 0;  // the largest record a peer may send
  // A sanitizer build runs the heartbeat threads many times slower, and CI's TSan run once saw a
  // beating peer silent for 400 ms: there the loss time (and every bound made from it) is longer.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  static constexpr int64_t kLostMs = 2000;
#else
  static constexpr int64_t kLostMs = 400;
#endif
  // `swapped`: rank r on the other's hub r's "process" (rank 1 - r there).
  explicit Pair(const Pair* same_hubs = nullptr, uint64_t nonce_ = 0x5eed, bool swapped = false)
      : nonce(nonce_) {
    for (int r = 0; r < 2; ++r) {
      if (same_hubs) {
        hubs[r] = same_hubs->hubs[swapped ? 1 - r : r];
      } else {
        Result<std::shared_ptr<HeartbeatHub>> h = HeartbeatHub::open();
        if (!h.ok()) ADD_FAILURE() << h.status().message();
        if (!h.ok()) return;
        hubs[r] = std::move(*h);
      }
      Result<std::unique_ptr<Heartbeat>> b = Heartbeat::open(hubs[r]);
      if (!b.ok()) ADD_FAILURE() << b.status().message();
      if (!b.ok()) return;
      hb[r] = std::move(*b);
      names.push_back(hb[r]->name());
    }
  }
  Status start(int r, int64_t ms = 5000) {
    return hb[r]->start(
        names, r, nonce, {1 - r}, kLostMs, [](int p) { return "peer " + std::to_string(p); },
        Deadline::after_ms(ms), record_bytes);
  }
  // Both, concurrently: each start() returns once it heard the other.
  void start_both() {
    Status s1;
    std::thread other([&] { s1 = start(1); });
    Status s0 = start(0);
    other.join();
    EXPECT_TRUE(s0.ok()) << s0.message();
    EXPECT_TRUE(s1.ok()) << s1.message();
  }
  // Polls `r`'s check until it is not ok, for up to `ms`.
  Status first_error(int r, int waiting_on, int64_t ms) {
    const Deadline d = Deadline::after_ms(ms);
    Status s;
    while ((s = hb[r]->check(waiting_on)).ok() && !d.expired()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return s;
  }
};

}  // namespace

TEST(Heartbeat, BeatingPeersStayAliveWellPastTheLossTime) {
  Pair p;
  ASSERT_TRUE(p.hb[1]);
  p.start_both();
  Status s = p.first_error(0, 1, 3 * Pair::kLostMs);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(p.hb[1]->check(0).ok());
}

TEST(Heartbeat, ASilentPeerIsLostWithinTheLossTimeNamed) {
  Pair p;
  ASSERT_TRUE(p.hb[1]);
  const auto t0 = std::chrono::steady_clock::now();
  // Peer 1 never beats (dead, or behind a cut link): start() gives up at the loss time.
  Status started = p.start(0, 10 * Pair::kLostMs);
  EXPECT_EQ(started.code(), sclRemoteError) << started.message();
  Status s = p.first_error(0, -1, 10 * Pair::kLostMs);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_EQ(s.code(), sclRemoteError);
  EXPECT_NE(s.message().find("peer 1 is lost: no heartbeat"), std::string::npos) << s.message();
  EXPECT_GE(ms, Pair::kLostMs - 50);
  EXPECT_LT(ms, 3 * Pair::kLostMs);
  EXPECT_EQ(p.hb[0]->culprit(), 1);
}

TEST(Heartbeat, AFailureReachesThePeerAtOnceWithItsCulprit) {
  for (auto why : {Heartbeat::State::kFailed, Heartbeat::State::kAborted}) {
    Pair p;
    ASSERT_TRUE(p.hb[1]);
    p.start_both();
    p.hb[1]->fail(why, why == Heartbeat::State::kFailed ? 0 : 1);
    Status s = p.first_error(0, -1, Pair::kLostMs / 2);  // well before a silence could tell
    EXPECT_EQ(s.code(), sclRemoteError);
    const std::string want = why == Heartbeat::State::kFailed
                                 ? "peer 1 failed and revoked the communicator because peer 0"
                                 : "peer 1 called sclCommAbort";
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
  }
}

TEST(Heartbeat, APeerThatLeftIsNotMissedButFailsAWaitForIt) {
  Pair p;
  ASSERT_TRUE(p.hb[1]);
  p.start_both();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  p.hb[1]->leave();
  Status waiting = p.first_error(0, 1, 5 * Pair::kLostMs);  // after the 200 ms grace
  EXPECT_EQ(waiting.code(), sclRemoteError);
  EXPECT_NE(waiting.message().find("peer 1 left the communicator"), std::string::npos)
      << waiting.message();
  Status s = p.first_error(0, -1, 3 * Pair::kLostMs);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(Heartbeat, APeerHeardSayingItFailedWasHeardAndStartSucceeds) {
  // Peer 1 made the communicator and failed at once, while peer 0 was still starting (as when a
  // fast rank's first call meets a mismatch): peer 0's start() succeeds, and its first check
  // reports the failure.
  Pair p;
  ASSERT_TRUE(p.hb[1]);
  p.hb[1]->fail(Heartbeat::State::kFailed, 1);
  p.start_both();
  Status s = p.first_error(0, -1, Pair::kLostMs / 2);
  EXPECT_EQ(s.code(), sclRemoteError);
  EXPECT_NE(s.message().find("peer 1 failed and revoked the communicator"), std::string::npos)
      << s.message();
}

TEST(Heartbeat, CommunicatorsOfOneProcessShareItsHub) {
  Result<std::unique_ptr<Heartbeat>> a = Heartbeat::open(), b = Heartbeat::open();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_FALSE((*a)->name().empty());
  EXPECT_EQ((*a)->name(), (*b)->name());
  Result<std::shared_ptr<HeartbeatHub>> own = HeartbeatHub::open();
  ASSERT_TRUE(own.ok()) << own.status().message();
  EXPECT_NE((*own)->name(), (*a)->name());
}

TEST(Heartbeat, CommunicatorsOnSharedHubsHearOnlyTheirOwn) {
  // Two communicators of the same two processes: one fails, and the other does not hear it;
  // one leaves, and the other's peers still beat past the loss time.
  Pair first;
  ASSERT_TRUE(first.hb[1]);
  Pair second(&first, 0xbeef);
  ASSERT_TRUE(second.hb[1]);
  first.start_both();
  second.start_both();
  first.hb[1]->fail(Heartbeat::State::kFailed, 1);
  Status failed = first.first_error(0, -1, Pair::kLostMs / 2);
  EXPECT_EQ(failed.code(), sclRemoteError) << failed.message();
  Status unaffected = second.first_error(0, 1, Pair::kLostMs / 2);
  EXPECT_TRUE(unaffected.ok()) << unaffected.message();
  first.hb[0]->leave();
  first.hb[1]->leave();
  Status s = second.first_error(0, 1, 3 * Pair::kLostMs);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(second.hb[1]->check(0).ok());
  // A third communicator on the hubs the first one left runs as a new one would.
  Pair third(&first, 0xcafe);
  ASSERT_TRUE(third.hb[1]);
  third.start_both();
  Status t = third.first_error(0, 1, 2 * Pair::kLostMs);
  EXPECT_TRUE(t.ok()) << t.message();
}

TEST(Heartbeat, TheSenderRankKeepsCommunicatorsWithOneNonceApart) {
  // Two communicators of one nonce on the same two processes, their ranks swapped: only the
  // sender's rank in the tag tells their beats apart. The second's rank 0 fails; the first's
  // rank 0, on the same hub, must not hear it.
  Pair first;
  ASSERT_TRUE(first.hb[1]);
  Pair second(&first, first.nonce, /*swapped=*/true);
  ASSERT_TRUE(second.hb[1]);
  first.start_both();
  second.start_both();
  second.hb[0]->fail(Heartbeat::State::kFailed, 0);
  Status failed = second.first_error(1, -1, Pair::kLostMs / 2);
  EXPECT_EQ(failed.code(), sclRemoteError) << failed.message();
  Status s = first.first_error(1, -1, Pair::kLostMs);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(first.hb[0]->check(-1).ok());
}

TEST(Heartbeat, ANonceStaysTakenUntilItsSessionStopsLingering) {
  Pair p;
  ASSERT_TRUE(p.hb[1]);
  EXPECT_FALSE(p.hb[0]->nonce_taken(p.nonce));
  p.start_both();
  EXPECT_TRUE(p.hb[0]->nonce_taken(p.nonce));
  EXPECT_TRUE(p.hb[0]->nonce_taken(p.nonce | uint64_t(1) << 40));  // as the tags cut it
  EXPECT_FALSE(p.hb[0]->nonce_taken(p.nonce + 1));
  std::shared_ptr<HeartbeatHub> hub = p.hubs[0];
  p.hb[0]->leave();
  EXPECT_TRUE(hub->nonce_taken(p.nonce));  // its receives linger
  const Deadline d = Deadline::after_ms(5000);
  while (hub->nonce_taken(p.nonce) && !d.expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(hub->nonce_taken(p.nonce));
}

TEST(Heartbeat, RecordsTravelOnSharedHubs) {
  Pair first;
  ASSERT_TRUE(first.hb[1]);
  Pair second(&first, 0xbeef);
  ASSERT_TRUE(second.hb[1]);
  for (Pair* p : {&first, &second}) {
    p->record_bytes = 4 * sizeof(uint64_t);
    p->start_both();
  }
  second.hb[1]->set_record({7, 8, 9});
  second.hb[0]->set_record({1});  // receives for records are posted once a rank has one
  first.hb[0]->set_record({2});
  const Deadline d = Deadline::after_ms(5000);
  while (!second.hb[0]->record(1) && !d.expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(second.hb[0]->record(1).has_value());
  EXPECT_EQ(*second.hb[0]->record(1), (std::vector<uint64_t>{7, 8, 9}));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(first.hb[0]->record(1).has_value());  // the other communicator's stays there
}

TEST(Heartbeat, TheLastCommunicatorsGoodbyeLeavesBeforeItsHubCloses) {
  // Rank 1's hub serves only it: leaving closes the hub, and rank 0 must still hear it left
  // (not lose it to silence).
  Pair p;
  ASSERT_TRUE(p.hb[1]);
  p.start_both();
  p.hubs[1] = nullptr;
  p.hb[1] = nullptr;  // leaves, and the hub closes
  Status waiting = p.first_error(0, 1, 5 * Pair::kLostMs);
  EXPECT_NE(waiting.message().find("peer 1 left the communicator"), std::string::npos)
      << waiting.message();
  Status s = p.first_error(0, -1, 3 * Pair::kLostMs);
  EXPECT_TRUE(s.ok()) << s.message();
}
