// Passes heap memfds between the local ranks of a new communicator: over an abstract Unix socket
// (no file-system name, so nothing outlives the job), with SCM_RIGHTS, checking the job secret and
// the peer's credentials (SO_PEERCRED: same uid, and the pid the rendezvous announced).
#pragma once

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
  // Must be called before the rendezvous, so the socket exists when peers learn about us.
  static Result<HeapExchange> listen(const bootstrap::Secret& secret, int rank);

  // Exchanges fds with every rank in `local` (ranks sharing our host, including us) and returns
  // one mapping per entry of `table` (empty refs for ranks on other hosts; self for us).
  Result<std::vector<PeerHeapRef>> exchange(const std::vector<bootstrap::RankInfo>& table,
                                            const std::vector<int>& local, int my_rank, int heap_fd,
                                            const Deadline& deadline);

 private:
  HeapExchange(UniqueFd fd, bootstrap::Secret secret) : listener_(std::move(fd)), secret_(secret) {}
  UniqueFd listener_;
  bootstrap::Secret secret_;
};

}  // namespace stratacl
