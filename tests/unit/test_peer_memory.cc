// The peer-memory seam below the algorithms: references are bounds-checked, reads through a
// peer's process are checked against the peer's pidfd, received heap fds are mapped only when
// they are sealed memfds, and result codes from peers are range-checked.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "coll/step.h"
#include "fabric/heap.h"
#include "fabric/heap_exchange.h"
#include "fabric/peer_heaps.h"
#include "fabric/peer_memory.h"
#include "sync/liveness.h"

using namespace stratacl;

TEST(PeerMemory, MappedReferencesStayInsideThePeersHeap) {
  std::vector<char> heap(4096, 'x');
  MappedAccess mapped({MappedAccess::Mapping{heap.data(), heap.size()}});
  PeerMemory mem;
  mem.bind(RefKind::kMapped, &mapped);
  const RemoteRef ref{100, 1000, RefKind::kMapped};
  Result<const char*> ok = mem.view(0, ref, 2, 50, 100);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, heap.data() + 100 + 2 * 1000 + 50);
  EXPECT_FALSE(mem.view(0, ref, 4, 0, 100).ok());                                  // past the end
  EXPECT_FALSE(mem.view(0, RemoteRef{1, ~0ull, RefKind::kMapped}, 3, 0, 1).ok());  // overflow
  EXPECT_FALSE(mem.view(0, RemoteRef{0, 0, RefKind::kProcess}, 0, 0, 1).ok());     // unbound kind
  char out[8];
  EXPECT_TRUE(mem.read(0, ref, 0, 0, 8, out).ok());
  EXPECT_EQ(std::memcmp(out, "xxxxxxxx", 8), 0);
}

// A process read whose peer has exited fails, even when the read itself succeeded: the pid may
// name another process by then. Simulated with our own pid (a read that works) watched through
// the pidfd of a child that exited.
TEST(PeerMemory, ProcessReadsFailOnceThePeerIsGone) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  UniqueFd pidfd(int(syscall(SYS_pidfd_open, child, 0)));
  ASSERT_TRUE(pidfd.valid());
  waitpid(child, nullptr, 0);
  std::vector<UniqueFd> fds;
  fds.push_back(std::move(pidfd));
  const Liveness live = Liveness::adopt({getpid()}, std::move(fds));
  const ProcessAccess access(&live, /*self=*/-1);
  const char word[8] = "payload";
  char out[8] = {};
  Status s = access.read(0, reinterpret_cast<uintptr_t>(word), sizeof word, out, false);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), sclRemoteError);
  EXPECT_NE(s.message().find("exited during a read"), std::string::npos) << s.message();
}

TEST(PeerMemory, OnlySealedMemfdsAreMapped) {
  const int unsealed = memfd_create("not-a-heap", MFD_CLOEXEC);
  ASSERT_GE(unsealed, 0);
  ASSERT_EQ(ftruncate(unsealed, 1 << 20), 0);
  Result<Heap*> bells = Heap::doorbells();
  ASSERT_TRUE(bells.ok());
  const PeerHeapFds fds{unsealed, (*bells)->fd(), 1 << 20, (*bells)->capacity()};
  Result<PeerHeapRef> r = PeerHeapRef::acquire(0x5eed, fds);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("sealed"), std::string::npos) << r.status().message();
  close(unsealed);
  // Our own heap is sealed: it maps (and says it is larger than it is: refused).
  Result<Heap*> data = Heap::instance();
  ASSERT_TRUE(data.ok());
  Result<UniqueFd> ro = (*data)->share_fd(false);
  ASSERT_TRUE(ro.ok());
  const PeerHeapFds too_big{ro->get(), (*bells)->fd(), (*data)->capacity() * 2,
                            (*bells)->capacity()};
  EXPECT_FALSE(PeerHeapRef::acquire(0x5eee, too_big).ok());
  const PeerHeapFds right{ro->get(), (*bells)->fd(), (*data)->capacity(), (*bells)->capacity()};
  Result<PeerHeapRef> m = PeerHeapRef::acquire(0x5eef, right);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_NE(m->data(), nullptr);
}

TEST(PeerMemory, PeerResultCodesAreRangeChecked) {
  EXPECT_EQ(peer_result(sclSuccess), sclSuccess);
  EXPECT_EQ(peer_result(sclInvalidUsage), sclInvalidUsage);
  EXPECT_EQ(peer_result(sclTimeout), sclTimeout);
  EXPECT_EQ(peer_result(sclNumResults), sclRemoteError);
  EXPECT_EQ(peer_result(-1), sclRemoteError);
  EXPECT_EQ(peer_result(0x7fffffff), sclRemoteError);
}

// Heap-exchange socket names are random: the same job secret and rank give a new name each
// time, so no local process can compute a rank's name (and bind it first) from another's.
TEST(HeapExchange, SocketNamesAreUnpredictable) {
  const bootstrap::Secret secret{1, 2, 3};
  Result<HeapExchange> a = HeapExchange::listen(secret);
  Result<HeapExchange> b = HeapExchange::listen(secret);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->name(), b->name());
  EXPECT_NE(a->name(), HeapExchange::Name{});
}
