// Waiting for a peer's flag: spin briefly, then sleep on the futex. Every wait has the same three
// exits besides success: the deadline, an abort (ours or a peer's revocation), and a dead peer.
#pragma once

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "core/status.h"
#include "sync/doorbells.h"
#include "sync/liveness.h"

namespace stratacl {

// The cores this process may run on (its affinity mask).
int usable_cpus();

struct WaitPolicy {
  int64_t spin_ns;            // busy-poll this long before sleeping
  bool yield_while_spinning;  // oversubscribed: give the core to the rank we wait for
  // Adapts to threads per core (`local_ranks` counts every spinning thread: ranks times their
  // workers and engines): with a core each, spin tens of µs (a kernel wake-up costs 25-40 µs
  // here); with more ranks than cores, a spinner steals the CPU from the rank it waits for.
  static WaitPolicy for_ranks(int local_ranks, int64_t spin_override_ns);
};

class Waiter {
 public:
  // blocks[r] is rank r's control block as we see it (ours included); instances[r] the identity
  // it had when we joined (ControlBlock::instance).
  Waiter(WaitPolicy policy, int self, std::vector<PeerBlock> blocks,
         std::vector<uint64_t> instances, const Liveness* live,
         const std::atomic<uint32_t>* local_abort)
      : policy_(policy),
        self_(self),
        blocks_(std::move(blocks)),
        instances_(std::move(instances)),
        live_(live),
        local_abort_(local_abort) {}

  // Waits until `flag`, a line of rank `rank`'s block, reaches `target`. `what` names the wait,
  // e.g. "allreduce #17 (step 40) waiting for arrival".
  Status wait(int rank, const Flag& flag, uint32_t target, const Deadline& deadline,
              const std::function<std::string()>& what) const;

  // Checks abort, revocation and liveness without waiting, on behalf of a wait for rank
  // `waiting_on` (-1: none in particular). A peer that destroyed the communicator (and perhaps
  // exited since) is an error only when it is the rank we wait for: point-to-point partners
  // finish at different times. An abort, a failure, or a death without departure is always one,
  // and the culprit is the rank that caused it: a rank that revoked and then exited names the
  // rank it blamed.
  Status check_peers(int waiting_on = -1) const;
  // True when ranks outnumber cores: then nobody may spin without yielding.
  bool oversubscribed() const { return policy_.yield_while_spinning; }
  // True when `flag`'s owner last published it from the core we run on now: whatever the count
  // of ranks and cores says (a CPU quota, another job, ranks of several communicators or hosts
  // on one machine), the owner then waits for this core, and spinning on it only delays it.
  // `my_cpu`: sched_getcpu(), read once by a caller that checks several flags.
  static bool shares_core(const Flag& flag, int my_cpu = sched_getcpu());
  int64_t spin_ns() const { return policy_.spin_ns; }
  // True once rank r has destroyed the communicator (its block may already be freed).
  bool departed(int r) const;
  // True once rank r's block was freed: nothing in it may be read any more.
  bool freed(int r) const;

 private:
  Status dead_peer(int r) const;
  pid_t pid(int r) const { return r == self_ ? getpid() : live_ ? live_->pid_of(r) : 0; }

  WaitPolicy policy_;
  int self_;
  std::vector<PeerBlock> blocks_;
  std::vector<uint64_t> instances_;
  const Liveness* live_;
  const std::atomic<uint32_t>* local_abort_;
};

}  // namespace stratacl
