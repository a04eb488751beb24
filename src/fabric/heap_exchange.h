// Passes heap memfds between the local ranks of a new communicator: over an abstract Unix socket
// (no file-system name, so nothing outlives the job), with SCM_RIGHTS, checking the job secret and
// the peer's credentials (SO_PEERCRED: same uid, and the pid the rendezvous announced). Each rank
// sends two fds: a read-only reopen of its data heap and its doorbell heap (fabric/heap.h).
//
// Nothing from outside can stall or hijack it: each rank's socket has a random name that only the
// rendezvous (authenticated by the job secret) reveals; a connection that does not deliver its
// message within a short grace is dropped while the others proceed; interrupted system calls are
// retried.
#pragma once

#include <array>
#include <vector>

#include "bootstrap/unique_id.h"
#include "bootstrap/wire.h"
#include "core/deadline.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "fabric/peer_heaps.h"

namespace stratacl {

class HeapExchange {
 public:
  using Name = std::array<uint8_t, 16>;

  // Must be called before the rendezvous, so the socket exists when peers learn its name.
  static Result<HeapExchange> listen(const bootstrap::Secret& secret);
  const Name& name() const { return name_; }

  // Exchanges heaps with every rank in `local` (ranks sharing our host, including us) and returns
  // one mapping per entry of `table` (empty refs for ranks on other hosts; self for us).
  Result<std::vector<PeerHeapRef>> exchange(const std::vector<bootstrap::RankInfo>& table,
                                            const std::vector<int>& local, int my_rank,
                                            const Deadline& deadline);

 private:
  HeapExchange(UniqueFd fd, bootstrap::Secret secret, Name name)
      : listener_(std::move(fd)), secret_(secret), name_(name) {}
  UniqueFd listener_;
  bootstrap::Secret secret_;
  Name name_;
};

}  // namespace stratacl
