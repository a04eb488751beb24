// The network layer on its own: the topology rules, and one real libfabric endpoint sending to
// itself (tagged messages, deadlines, registrations of heap memory).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "fabric/heap.h"
#include "net/endpoint.h"
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
  EXPECT_NE(uneven.status().message().find("same number"), std::string::npos);
  Result<Topology> interleaved = Topology::of({1, 2, 1, 2}, 0);
  ASSERT_FALSE(interleaved.ok());
  EXPECT_NE(interleaved.status().message().find("rank 1 is not numbered"), std::string::npos);
}

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
        batch, Deadline::after_ms(ms), [] { return Status::Ok(); },
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

TEST(Endpoint, AMessageOfTheWrongSizeIsAnErrorNamingThePeer) {
  Self self;
  ASSERT_TRUE(self.ep);
  std::vector<char> small(100), big(200);
  std::vector<Transfer> batch{transfer(false, big.data(), big.size(), 3),
                              transfer(true, small.data(), small.size(), 3)};
  Status s = self.run(batch, 5000);
  EXPECT_EQ(s.code(), sclRemoteError);
  EXPECT_NE(s.message().find("peer 0 sent 100 bytes where 200 were expected"), std::string::npos)
      << s.message();
}
