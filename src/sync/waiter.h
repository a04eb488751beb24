// Waiting for a peer's flag: spin briefly, then sleep on the futex. Every wait has the same three
// exits besides success: the deadline, an abort (ours or a peer's revocation), and a dead peer.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "core/status.h"
#include "sync/control_block.h"
#include "sync/liveness.h"

namespace stratacl {

struct WaitPolicy {
  int64_t spin_ns;            // busy-poll this long before sleeping
  bool yield_while_spinning;  // oversubscribed: give the core to the rank we wait for
  // Adapts to ranks per core: with a core each, spin tens of µs (a kernel wake-up costs 25-40 µs
  // here); with more ranks than cores, a spinner steals the CPU from the rank it waits for.
  static WaitPolicy for_ranks(int local_ranks, int64_t spin_override_ns);
};

class Waiter {
 public:
  // instances[r] is the identity rank r's block had when we joined (ControlBlock::instance).
  Waiter(WaitPolicy policy, std::vector<ControlBlock*> peers, std::vector<uint64_t> instances,
         const Liveness* live, const std::atomic<uint32_t>* local_abort)
      : policy_(policy),
        peers_(std::move(peers)),
        instances_(std::move(instances)),
        live_(live),
        local_abort_(local_abort) {}

  // Waits until flag.value reaches `target`. `rank` is the owner of the flag (for messages);
  // `what` names the wait, e.g. "allreduce #17: arrival".
  Status wait(const Flag& flag, uint32_t target, int rank, const Deadline& deadline,
              const std::function<std::string()>& what) const;
  // The same with a timeout that starts now, read from the clock only if we must wait (the
  // common case of a step: one clock read serves both the spin budget and the deadline).
  Status wait_ms(const Flag& flag, uint32_t target, int rank, int64_t timeout_ms,
                 const std::function<std::string()>& what) const;

  // Checks abort, revocation and liveness without waiting, on behalf of a wait for rank
  // `waiting_on` (-1: none in particular). A peer that destroyed the communicator (and perhaps
  // exited since) is an error only when it is the rank we wait for: point-to-point partners
  // finish at different times. An abort, a failure, or a death without departure is always one.
  Status check_peers(int waiting_on = -1) const;
  // True when ranks outnumber cores: then nobody may spin without yielding.
  bool oversubscribed() const { return policy_.yield_while_spinning; }
  // Spins from `start_ns` for the policy's budget, then sleeps until `deadline`.
  Status wait_from(const Flag& flag, uint32_t target, int rank, int64_t start_ns,
                   const Deadline& deadline, const std::function<std::string()>& what) const;
  // True once rank r has destroyed the communicator (its block may already be freed).
  bool departed(int r) const;

 private:
  WaitPolicy policy_;
  std::vector<ControlBlock*> peers_;
  std::vector<uint64_t> instances_;
  const Liveness* live_;
  const std::atomic<uint32_t>* local_abort_;
};

// Publishes `value` and wakes sleepers, if any (Dekker-style: store, full fence, load sleepers).
void signal_flag(Flag& flag, uint32_t value);
// Wakes sleepers without changing the value (used by abort: they re-check and see it).
void wake_flag(Flag& flag);

}  // namespace stratacl
