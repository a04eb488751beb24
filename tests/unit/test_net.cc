// The network layer on its own: one real libfabric endpoint sending to itself (tagged messages,
// deadlines, registrations of heap memory, one-sided writes, a failed call's void transfers); the
// rxm settings chosen for tcp. The rail's rules of choice are tested in test_rail_rules.cc, the
// heartbeat in test_heartbeat.cc, the topology in test_topology.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/config.h"
#include "fabric/heap.h"
#include "net/endpoint.h"
#include "net/provider.h"

using namespace stratacl;
using namespace stratacl::net;

namespace {

struct Self {
  std::unique_ptr<Endpoint> ep;
  Self() {
    Result<std::unique_ptr<Endpoint>> e = Endpoint::open(20000, false);
    if (!e.ok()) ADD_FAILURE() << e.status().message();
    if (!e.ok()) return;
    ep = std::move(*e);
    EXPECT_TRUE(ep->connect({ep->name()}, 0).ok());
  }
  Status run(std::vector<Transfer>& batch, int64_t ms) {
    return ep->run(
        batch, Deadline::after_ms(ms), [](int) { return Status::Ok(); },
        [](int p) { return "peer " + std::to_string(p); });
  }
};

Transfer transfer(bool send, void* buf, size_t bytes, uint64_t tag) {
  Transfer t;
  t.send = send, t.buf = buf, t.bytes = bytes, t.tag = tag;
  return t;
}

}  // namespace

TEST(Endpoint, SendsToItselfFromHeapMemoryRegisteredOnce) {
  Self self;
  ASSERT_TRUE(self.ep);
  Heap* heap = *Heap::instance();
  const size_t bytes = 3 << 20;
  char* a = static_cast<char*>(*heap->allocate(bytes));
  char* b = static_cast<char*>(*heap->allocate(bytes));
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < bytes; ++i) a[i] = char(i * 7 + size_t(round));
    std::memset(b, 0, bytes);
    std::vector<Transfer> batch{transfer(false, b, bytes, 1 + uint64_t(round)),
                                transfer(true, a, bytes, 1 + uint64_t(round))};
    ASSERT_TRUE(self.run(batch, 10000).ok());
    ASSERT_EQ(std::memcmp(a, b, bytes), 0) << "round " << round;
  }
  // Both buffers lie in the first chunks of the heap: a handful of registrations, made once.
  const size_t held = self.ep->registrations().heap_registrations();
  EXPECT_GE(held, 1u);
  EXPECT_LE(held, 2u);
  // A freed range given back to the kernel makes registrations stale: the next use registers
  // again and the data still arrives.
  char* big = static_cast<char*>(*heap->allocate(size_t(32) << 20));
  const uint64_t punches = heap->punches();
  ASSERT_TRUE(heap->release(big).ok());
  EXPECT_GT(heap->punches(), punches);
  std::memset(b, 0, bytes);
  std::vector<Transfer> again{transfer(false, b, bytes, 9), transfer(true, a, bytes, 9)};
  ASSERT_TRUE(self.run(again, 10000).ok());
  EXPECT_EQ(std::memcmp(a, b, bytes), 0);
  ASSERT_TRUE(heap->release(a).ok());
  ASSERT_TRUE(heap->release(b).ok());
}

TEST(Endpoint, AReceiveNobodySendsTimesOutAndClosesTheEndpoint) {
  Self self;
  ASSERT_TRUE(self.ep);
  std::vector<char> buf(64);
  std::vector<Transfer> batch{transfer(false, buf.data(), buf.size(), 5)};
  Status s = self.run(batch, 100);
  EXPECT_EQ(s.code(), sclTimeout);
  EXPECT_NE(s.message().find("waiting for peer 0"), std::string::npos) << s.message();
  std::vector<Transfer> later{transfer(true, buf.data(), buf.size(), 6)};
  s = self.run(later, 100);
  EXPECT_EQ(s.code(), sclRemoteError);
  EXPECT_NE(s.message().find("closed"), std::string::npos) << s.message();
}

TEST(Endpoint, AShorterMessageIsAMismatchNamingThePeerAndLeavesTheEndpointUsable) {
  Self self;
  ASSERT_TRUE(self.ep);
  std::vector<char> small(100), big(200);
  std::vector<Transfer> batch{transfer(false, big.data(), big.size(), 3),
                              transfer(true, small.data(), small.size(), 3)};
  Status s = self.run(batch, 5000);
  EXPECT_EQ(s.code(), sclInvalidUsage);
  EXPECT_NE(s.message().find("peer 0 sent 100 bytes where this rank expects 200"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(self.ep->closed());
  std::vector<Transfer> next{transfer(false, big.data(), small.size(), 4),
                             transfer(true, small.data(), small.size(), 4)};
  EXPECT_TRUE(self.run(next, 5000).ok());
}

Transfer one_sided(bool send, void* buf, size_t bytes, uint64_t tag) {
  Transfer t = transfer(send, buf, bytes, tag);
  t.one_sided = true;
  return t;
}

TEST(Endpoint, WritesOneSidedIntoHeapAndForeignMemoryBesideTaggedMessages) {
  Self self;
  ASSERT_TRUE(self.ep);
  ASSERT_TRUE(self.ep->writes()) << describe(self.ep->info());  // tcp;ofi_rxm writes
  Heap* heap = *Heap::instance();
  const size_t bytes = (5 << 20) + 3;  // not a multiple of anything
  char* src = static_cast<char*>(*heap->allocate(bytes));
  char* dst = static_cast<char*>(*heap->allocate(bytes));
  std::vector<char> src2(bytes), foreign(bytes), small_src(1000), small_dst(1000);
  size_t held = 0;
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < bytes; ++i) src[i] = char(i * 13 + size_t(round));
    for (size_t i = 0; i < bytes; ++i) src2[i] = char(i * 7 + 1 + size_t(round));
    for (size_t i = 0; i < small_src.size(); ++i) small_src[i] = char(i + size_t(round));
    std::memset(dst, 0, bytes);
    std::fill(foreign.begin(), foreign.end(), 0);
    std::fill(small_dst.begin(), small_dst.end(), 0);
    // The tagged message shares the first pair's tag: with the kind bits not ignored, notices
    // and clear-to-sends never match it, nor it them. An empty one-sided pair is complete on
    // its clear-to-send alone.
    const uint64_t tag = 40 + uint64_t(round);
    std::vector<Transfer> batch{one_sided(false, dst, bytes, tag),
                                one_sided(true, src, bytes, tag),
                                transfer(false, small_dst.data(), 1000, tag),
                                transfer(true, small_src.data(), 1000, tag),
                                one_sided(false, foreign.data(), bytes, tag + 100),
                                one_sided(true, src2.data(), bytes, tag + 100),
                                one_sided(false, nullptr, 0, tag + 200),
                                one_sided(true, nullptr, 0, tag + 200)};
    Status s = self.run(batch, 10000);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_EQ(std::memcmp(src, dst, bytes), 0) << "round " << round;
    ASSERT_EQ(std::memcmp(src2.data(), foreign.data(), bytes), 0) << "round " << round;
    ASSERT_EQ(small_src, small_dst) << "round " << round;
    // The heap's registrations are made in the first round and kept.
    if (round == 0) held = self.ep->registrations().heap_registrations();
    EXPECT_EQ(self.ep->registrations().heap_registrations(), held);
  }
  EXPECT_GE(held, 1u);
  ASSERT_TRUE(heap->release(src).ok());
  ASSERT_TRUE(heap->release(dst).ok());
}

// Where receives ignore the kind bits (as rail batches do), a one-sided end meeting a message
// end is another call, named at once: neither waits for the deadline.
TEST(Endpoint, AOneSidedEndMeetingAMessageEndIsAnotherCallNamedAtOnce) {
  std::vector<char> a(4096, 'a'), b(4096, 'b');
  for (const bool one_sided_sender : {true, false}) {
    Self self;
    ASSERT_TRUE(self.ep);
    Transfer send = one_sided_sender ? one_sided(true, a.data(), a.size(), 7)
                                     : transfer(true, a.data(), a.size(), 7);
    Transfer recv = one_sided_sender ? transfer(false, b.data(), b.size(), 7)
                                     : one_sided(false, b.data(), b.size(), 7);
    send.ignore = recv.ignore = kKindTags;
    std::vector<Transfer> batch{recv, send};
    const auto t0 = std::chrono::steady_clock::now();
    Status s = self.run(batch, 20000);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(s.code(), sclInvalidUsage) << s.message();
    EXPECT_NE(s.message().find("peer 0 is in another call"), std::string::npos) << s.message();
    EXPECT_LT(took, 5.0) << "one-sided sender: " << one_sided_sender;
    EXPECT_EQ(b, std::vector<char>(4096, 'b'));
  }
}

TEST(Endpoint, AFailedCallsTransferMovesNothingSaysSoAndLeavesBothEndsInStep) {
  // The failed end: the sender (its message or notice says so), or a one-sided receiver (its
  // clear-to-send does). A message into a failed receive is drained as usual.
  for (const bool written : {false, true}) {
    for (const bool sender_failed : {true, false}) {
      if (!written && !sender_failed) continue;
      Self self;
      ASSERT_TRUE(self.ep);
      std::vector<char> a(4096, 'a'), b(4096, 'b');
      auto make = [written](bool send, std::vector<char>& buf, uint64_t tag) {
        Transfer t = written ? one_sided(send, buf.data(), buf.size(), tag)
                             : transfer(send, buf.data(), buf.size(), tag);
        t.ignore = kKindTags | kFailedTag;
        return t;
      };
      const uint64_t failed = kFailedTag;
      std::vector<Transfer> batch{make(false, b, 7 | (sender_failed ? 0 : failed)),
                                  make(true, a, 7 | (sender_failed ? failed : 0))};
      Status s = self.run(batch, 10000);
      ASSERT_TRUE(s.ok()) << "one-sided " << written << ": " << s.message();
      EXPECT_TRUE(batch[sender_failed ? 0 : 1].peer_failed) << "one-sided " << written;
      EXPECT_FALSE(batch[sender_failed ? 1 : 0].peer_failed) << "one-sided " << written;
      EXPECT_EQ(b, std::vector<char>(4096, 'b')) << "one-sided " << written;
      // Each end took the other's first message: the next batch pairs as usual and moves data.
      std::vector<Transfer> next{make(false, b, 8), make(true, a, 8)};
      s = self.run(next, 10000);
      ASSERT_TRUE(s.ok()) << s.message();
      EXPECT_FALSE(next[0].peer_failed);
      EXPECT_EQ(b, a) << "one-sided " << written;
    }
  }
}

TEST(Endpoint, AFailedCallsSendWithAHeaderCarriesTheHeaderOnly) {
  // The world batches' size words ride in a message's header (net::Rail::exchange): a failed
  // call's send still tells its word, but none of its data, small (injected) or not. Its data
  // could be longer than the peer's receive, which tcp does not survive.
  for (const size_t bytes : {size_t(16), size_t(64) << 10}) {
    Self self;
    ASSERT_TRUE(self.ep);
    if (!self.ep->carries_headers()) GTEST_SKIP() << "the provider takes no two-part messages";
    std::vector<char> a(2 * bytes, 'a'), b(bytes, 'b');
    uint64_t told = 1234, heard = 0;
    Transfer recv = transfer(false, b.data(), b.size(), 9);
    Transfer send = transfer(true, a.data(), a.size(), 9 | kFailedTag);
    recv.ignore = send.ignore = kFailedTag;
    recv.header = &heard, send.header = &told;
    std::vector<Transfer> batch{recv, send};
    const Status s = self.run(batch, 10000);
    ASSERT_TRUE(s.ok()) << bytes << ": " << s.message();
    EXPECT_TRUE(batch[0].peer_failed) << bytes;
    EXPECT_EQ(heard, told) << bytes;
    EXPECT_EQ(b, std::vector<char>(bytes, 'b')) << bytes;
    EXPECT_FALSE(self.ep->closed()) << bytes;
  }
}

TEST(Endpoint, AFailedCallsMessageIsExcusedItsSignatureButNotItsNumber) {
  // Tag bits 0xf0 stand for the call's signature, 0xf00 for its number.
  for (const uint64_t theirs :
       {uint64_t(0x017) | kFailedTag, uint64_t(0x107) | kFailedTag, uint64_t(0x017)}) {
    Self self;
    ASSERT_TRUE(self.ep);
    self.ep->excuse_in_failed_calls(0xf0);
    std::vector<char> a(64, 'a'), b(64, 'b');
    Transfer recv = transfer(false, b.data(), b.size(), 0x007);
    Transfer send = transfer(true, a.data(), a.size(), theirs);
    recv.ignore = send.ignore = kKindTags | kFailedTag | 0xff0;
    std::vector<Transfer> batch{recv, send};
    const Status s = self.run(batch, 10000);
    if (theirs == (uint64_t(0x017) | kFailedTag)) {
      EXPECT_TRUE(s.ok()) << s.message();
      EXPECT_TRUE(batch[0].peer_failed);
    } else {
      EXPECT_EQ(s.code(), sclInvalidUsage) << std::hex << theirs << ": " << s.message();
      EXPECT_NE(s.message().find("peer 0 is in another call"), std::string::npos) << s.message();
    }
    if (theirs & kFailedTag) {
      EXPECT_EQ(b, std::vector<char>(64, 'b'));  // a void message is empty
    }
  }
}

TEST(Endpoint, AOneSidedTransferOfTheWrongSizeIsAnErrorNamingThePeerAndWritesNothing) {
  Self self;
  ASSERT_TRUE(self.ep);
  std::vector<char> small(100, 'x'), big(200, 'y');
  std::vector<Transfer> batch{one_sided(false, small.data(), small.size(), 3),
                              one_sided(true, big.data(), big.size(), 3)};
  Status s = self.run(batch, 5000);
  EXPECT_EQ(s.code(), sclInvalidUsage);
  EXPECT_NE(s.message().find("peer 0 expects 100 bytes where this rank sends 200"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(small, std::vector<char>(100, 'x'));
  EXPECT_TRUE(self.ep->closed());
}

// A clear-to-send's key reaches the receive buffer of its own transfer, while it runs: a
// stranger who read one off the wire (plain tcp) can write neither there afterwards nor
// anywhere else in the heap. Before, the key was the heap chunk's, kept for the endpoint's life.
TEST(Endpoint, AClearToSendKeyIsDeadOnceItsTransferEnds) {
  Self self;
  ASSERT_TRUE(self.ep);
  ASSERT_TRUE(self.ep->writes());
  Heap* heap = *Heap::instance();
  const size_t bytes = 2 << 20;
  char* src = static_cast<char*>(*heap->allocate(bytes));
  char* dst = static_cast<char*>(*heap->allocate(bytes));
  std::memset(src, 1, bytes);
  std::memset(dst, 0, bytes);
  std::vector<Transfer> batch{one_sided(false, dst, bytes, 77), one_sided(true, src, bytes, 77)};
  ASSERT_TRUE(self.run(batch, 10000).ok());
  ASSERT_EQ(dst[0], 1);
  const ClearToSend seen = batch[0].cts;  // what went over the wire
  std::vector<char> rogue(4096, 66);
  // The sender's completion only says the write left (tcp completes on transmit); the target
  // refuses it. Whatever the sender hears, nothing may land.
  Status later =
      self.ep->write_for_testing(0, rogue.data(), rogue.size(), seen, Deadline::after_ms(2000));
  ClearToSend elsewhere = seen;
  elsewhere.addr = reinterpret_cast<uint64_t>(src);  // another heap buffer, same chunk
  Status beside = self.ep->write_for_testing(0, rogue.data(), rogue.size(), elsewhere,
                                             Deadline::after_ms(2000));
  // Let the target side take them in.
  std::vector<Transfer> probe{transfer(false, rogue.data(), 8, 78),
                              transfer(true, rogue.data() + 8, 8, 78)};
  Status after = self.run(probe, 2000);
  std::printf("stale key: %s; beside: %s; next batch: %s\n", later.message().c_str(),
              beside.message().c_str(), after.message().c_str());
  for (size_t i = 0; i < bytes; i += 4096) {
    ASSERT_EQ(dst[i], 1) << "a stale key wrote into the receive buffer at " << i;
    ASSERT_EQ(src[i], 1) << "the key wrote elsewhere in the heap at " << i;
  }
  ASSERT_TRUE(heap->release(src).ok());
  ASSERT_TRUE(heap->release(dst).ok());
}

// Receives match the sender's address, not only the tag: a stranger who reaches our endpoint
// and sends with the tag a peer would use (its index is in the tag's low bits, anyone can set
// them) does not land in the receive; the peer's message does.
TEST(Endpoint, AStrangerUsingAPeersTagDoesNotLandInItsReceive) {
  auto open = [] {
    Result<std::unique_ptr<Endpoint>> e = Endpoint::open(20000, false);
    EXPECT_TRUE(e.ok()) << e.status().message();
    return e.ok() ? std::move(*e) : nullptr;
  };
  std::unique_ptr<Endpoint> a = open(), b = open(), stranger = open();
  ASSERT_TRUE(a && b && stranger);
  ASSERT_TRUE(a->info().caps & FI_DIRECTED_RECV) << describe(a->info());
  ASSERT_TRUE(a->connect({a->name(), b->name()}, 0).ok());
  ASSERT_TRUE(b->connect({a->name(), b->name()}, 1).ok());
  // The stranger numbers itself 1, as b is numbered in a's list, so its tags carry index 1.
  ASSERT_TRUE(stranger->connect({a->name(), stranger->name()}, 1).ok());
  auto no_stop = [](int) { return Status::Ok(); };
  auto who = [](int p) { return "peer " + std::to_string(p); };
  std::vector<char> got(64, 0), real(64, 'b'), forged(64, 's');
  Status received;
  std::thread receiver([&] {
    std::vector<Transfer> batch{transfer(false, got.data(), got.size(), 5)};
    batch[0].peer = 1;
    received = a->run(batch, Deadline::after_ms(5000), no_stop, who);
  });
  std::vector<Transfer> lie{transfer(true, forged.data(), forged.size(), 5)};
  lie[0].peer = 0;
  ASSERT_TRUE(stranger->run(lie, Deadline::after_ms(5000), no_stop, who).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // it has arrived by now
  std::vector<Transfer> truth{transfer(true, real.data(), real.size(), 5)};
  truth[0].peer = 0;
  ASSERT_TRUE(b->run(truth, Deadline::after_ms(5000), no_stop, who).ok());
  receiver.join();
  ASSERT_TRUE(received.ok()) << received.message();
  EXPECT_EQ(got, real) << "the stranger's message landed in the receive from peer 1";
}

// rxm's tcp settings go into the environment where the user left them unset, and a user's own
// value stays.
TEST(Provider, RxmTcpDefaultsFillOnlyWhatTheUserLeftUnset) {
  const char* names[] = {"FI_OFI_RXM_EAGER_LIMIT", "FI_OFI_RXM_MSG_RX_SIZE"};
  std::string saved[2];
  bool had[2];
  for (int i = 0; i < 2; ++i) {
    const char* v = getenv(names[i]);
    had[i] = v != nullptr;
    if (v) saved[i] = v;
  }
  unsetenv(names[0]);
  setenv(names[1], "64", 1);
  set_rxm_tcp_defaults();
  EXPECT_STREQ(getenv(names[0]), std::to_string(kNetEagerMaxBytes).c_str());
  EXPECT_STREQ(getenv(names[1]), "64");
  unsetenv(names[1]);
  set_rxm_tcp_defaults();
  EXPECT_STREQ(getenv(names[1]), "128");
  for (int i = 0; i < 2; ++i) {
    if (had[i]) {
      setenv(names[i], saved[i].c_str(), 1);
    } else {
      unsetenv(names[i]);
    }
  }
}
