#include "sync/waiter.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include "sync/futex.h"

namespace stratacl {
namespace {
constexpr int64_t kSleepSliceNs = 10 * 1000 * 1000;  // re-check abort and liveness this often

const char* revocation_text(uint32_t why) {
  return why == kAborted    ? "called sclCommAbort"
         : why == kMismatch ? "found the ranks' calls mismatched and revoked the communicator"
                            : "failed and revoked the communicator";
}
}  // namespace

int usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? int(n) : 1;
}

WaitPolicy WaitPolicy::for_ranks(int local_ranks, int64_t spin_override_ns) {
  const bool oversubscribed = local_ranks > usable_cpus();
  WaitPolicy p{oversubscribed ? 20000 : 50000, oversubscribed};
  if (spin_override_ns >= 0) p.spin_ns = spin_override_ns;
  return p;
}

void signal_flag(const OwnBlock& mine, Flag& flag, uint32_t value) {
  flag.cpu_plus_one.store(sched_getcpu() + 1, std::memory_order_relaxed);  // -1 (failed): 0
  flag.value.store(value, std::memory_order_seq_cst);
  if (mine.doorbell(&flag).load(std::memory_order_seq_cst) != 0) futex_wake_all(&flag.value);
}

void wake_flag(const OwnBlock&, const Flag& flag) {
  futex_wake_all(const_cast<std::atomic<uint32_t>*>(&flag.value));
}

bool Waiter::shares_core(const Flag& flag, int my_cpu) {
  const int theirs = flag.cpu_plus_one.load(std::memory_order_relaxed) - 1;
  return theirs >= 0 && theirs == my_cpu;
}

bool Waiter::departed(int r) const {
  const ControlBlock* cb = blocks_[size_t(r)].cb;
  // Identity first: once it changed, the block is freed and its other fields mean nothing.
  return cb->instance.load(std::memory_order_acquire) != instances_[size_t(r)] ||
         cb->depart.value.load(std::memory_order_acquire) != 0;
}

bool Waiter::freed(int r) const {
  return blocks_[size_t(r)].cb->instance.load(std::memory_order_acquire) != instances_[size_t(r)];
}

// Rank r is dead. If it revoked the communicator before it exited, it is not the cause: the rank
// it blamed is (three ranks, rank 1 stopped: rank 0 times out naming rank 1 and exits; rank 2
// must name rank 1 too, not rank 0).
Status Waiter::dead_peer(int r) const {
  const ControlBlock* cb = blocks_[size_t(r)].cb;
  const bool freed = cb->instance.load(std::memory_order_acquire) != instances_[size_t(r)];
  const uint32_t why = freed ? kDeparted : cb->revoked.load(std::memory_order_acquire);
  const int culprit = freed ? -1 : cb->culprit.load(std::memory_order_acquire);
  if ((why == kFailed || why == kMismatch || why == kAborted) && culprit >= 0 && culprit != r &&
      size_t(culprit) < blocks_.size()) {
    if (culprit == self_) {
      return Errorf(sclRemoteError, "rank %d (pid %d) gave up on this rank (%d), %s, then exited",
                    r, pid(r), self_, revocation_text(why))
          .with_culprit(culprit);
    }
    return Errorf(sclRemoteError, "rank %d (pid %d) failed: rank %d (pid %d) %s, then exited",
                  culprit, pid(culprit), r, pid(r), revocation_text(why))
        .with_culprit(culprit);
  }
  return Errorf(sclRemoteError, "rank %d (pid %d) %s", r, pid(r),
                why == kAborted    ? "called sclCommAbort and exited"
                : why == kDeparted ? "left the communicator and exited"
                                   : "died")
      .with_culprit(r);
}

Status Waiter::check_peers(int waiting_on) const {
  if (local_abort_ && local_abort_->load(std::memory_order_acquire)) {
    return Errorf(sclRemoteError, "the communicator was aborted by this rank");
  }
  const std::vector<bool> dead = live_ ? live_->dead_ranks() : std::vector<bool>(blocks_.size());
  // A death is the root cause of everything else, so it is reported first.
  for (size_t r = 0; r < blocks_.size(); ++r) {
    if (!dead[r]) continue;
    if (departed(int(r)) && int(r) != waiting_on) continue;  // left cleanly, then exited
    return dead_peer(int(r));
  }
  for (size_t r = 0; r < blocks_.size(); ++r) {
    const ControlBlock* cb = blocks_[r].cb;
    // A freed block (identity changed) says nothing more than "departed".
    const bool freed = cb->instance.load(std::memory_order_acquire) != instances_[r];
    const uint32_t why = freed ? kDeparted : cb->revoked.load(std::memory_order_acquire);
    if (why == kAborted || why == kFailed || why == kMismatch) {
      const int culprit = cb->culprit.load(std::memory_order_acquire);
      std::string cause;
      const bool blamed = culprit >= 0 && size_t(culprit) != r && size_t(culprit) < blocks_.size();
      if (why == kFailed && blamed && culprit == self_) {
        // Its call failed waiting for us (our call is another, or we came too late).
        cause = ": its call gave up on this rank";
      } else if (why == kFailed && blamed) {
        cause = " because rank " + std::to_string(culprit) + " (pid " +
                std::to_string(pid(culprit)) + ") failed";
      }
      // A mismatch a peer saw first (across hosts, where ranks learn it at different moments)
      // is a mismatch here too.
      return Errorf(why == kMismatch ? sclInvalidUsage : sclRemoteError, "rank %zu (pid %d) %s%s",
                    r, pid(int(r)), revocation_text(why), cause.c_str())
          .with_culprit(blamed ? culprit : int(r));
    }
    if (departed(int(r)) && int(r) == waiting_on) {
      return Errorf(sclRemoteError,
                    "rank %zu (pid %d) left the communicator (destroyed it, or its init failed)", r,
                    pid(int(r)))
          .with_culprit(int(r));
    }
  }
  return Status::Ok();
}

Status Waiter::wait(int rank, const Flag& flag, uint32_t target, const Deadline& deadline,
                    const std::function<std::string()>& what) const {
  auto reached = [&] { return seq_reached(flag.value.load(std::memory_order_acquire), target); };
  if (reached()) return Status::Ok();
  const int64_t spin_until = now_ns() + policy_.spin_ns;
  // Oversubscribed, or sharing a core with the rank we wait for, that rank may need this very
  // core: give it up at every check instead of burning a slice of pauses first.
  const bool yield = policy_.yield_while_spinning || shares_core(flag);
  const int checks_per_round = yield ? 1 : 64;
  do {
    for (int i = 0; i < checks_per_round; ++i) {
      if (reached()) return Status::Ok();
      cpu_relax();
    }
    if (yield) sched_yield();
  } while (now_ns() < spin_until);

  Doorbell& doorbell = blocks_[size_t(rank)].doorbell(&flag);
  auto* word = const_cast<std::atomic<uint32_t>*>(&flag.value);  // futex_wait only reads it
  for (;;) {
    if (reached()) return Status::Ok();
    Status s = check_peers(rank);
    if (!s.ok()) {
      // The flag may have been set just before the peer departed or died (a peer departs only
      // after seeing every flag of the step): that is a success, not a failure.
      if (reached()) return Status::Ok();
      return Status(s.code(), what() + ": " + s.message()).with_culprit(s.culprit());
    }
    if (deadline.expired()) {
      return Errorf(sclTimeout, "%s: timed out waiting for rank %d (it is at %u, we need %u)",
                    what().c_str(), rank, flag.value.load(), target)
          .with_culprit(rank);
    }
    doorbell.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = flag.value.load(std::memory_order_seq_cst);
    if (!seq_reached(seen, target)) {
      futex_wait(word, seen, std::min(kSleepSliceNs, deadline.remaining_ns() + 1));
    }
    doorbell.fetch_sub(1, std::memory_order_seq_cst);
  }
}

}  // namespace stratacl
