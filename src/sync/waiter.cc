#include "sync/waiter.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include "sync/futex.h"

namespace stratacl {
namespace {
constexpr int64_t kSleepSliceNs = 10 * 1000 * 1000;  // re-check abort and liveness this often

inline void cpu_relax() { __builtin_ia32_pause(); }

int online_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? int(n) : 1;
}
}  // namespace

WaitPolicy WaitPolicy::for_ranks(int local_ranks, int64_t spin_override_ns) {
  const bool oversubscribed = local_ranks > online_cpus();
  WaitPolicy p{oversubscribed ? 20000 : 50000, oversubscribed};
  if (spin_override_ns >= 0) p.spin_ns = spin_override_ns;
  return p;
}

void signal_flag(Flag& flag, uint32_t value) {
  flag.value.store(value, std::memory_order_seq_cst);
  if (flag.sleepers.load(std::memory_order_seq_cst) != 0) futex_wake_all(&flag.value);
}

void wake_flag(Flag& flag) { futex_wake_all(&flag.value); }

bool Waiter::departed(int r) const {
  const ControlBlock* cb = peers_[size_t(r)];
  // Identity first: once it changed, the block is freed and its other fields mean nothing.
  return cb->instance.load(std::memory_order_acquire) != instances_[size_t(r)] ||
         cb->depart.value.load(std::memory_order_acquire) != 0;
}

Status Waiter::check_peers(int waiting_on) const {
  if (local_abort_ && local_abort_->load(std::memory_order_acquire)) {
    return Errorf(sclRemoteError, "the communicator was aborted by this rank");
  }
  const std::vector<bool> dead = live_ ? live_->dead_ranks() : std::vector<bool>(peers_.size());
  auto pid = [&](int r) { return live_ ? live_->pid_of(r) : 0; };
  // A death is the root cause of everything else, so it is reported first.
  for (size_t r = 0; r < peers_.size(); ++r) {
    if (!peers_[r] || !dead[r]) continue;
    if (departed(int(r)) && int(r) != waiting_on) continue;  // left cleanly, then exited
    return Errorf(sclRemoteError, "rank %zu (pid %d) %s", r, pid(int(r)),
                  departed(int(r)) ? "destroyed the communicator and exited" : "died")
        .with_culprit(int(r));
  }
  for (size_t r = 0; r < peers_.size(); ++r) {
    if (!peers_[r]) continue;
    // A freed block (identity changed) says nothing more than "departed".
    const bool freed = peers_[r]->instance.load(std::memory_order_acquire) != instances_[r];
    const uint32_t why = freed ? kDeparted : peers_[r]->revoked.load(std::memory_order_acquire);
    if (why == kAborted || why == kFailed) {
      const int culprit = peers_[r]->culprit.load(std::memory_order_acquire);
      std::string cause;
      if (why == kFailed && culprit >= 0 && size_t(culprit) != r &&
          size_t(culprit) < peers_.size()) {
        cause = " because rank " + std::to_string(culprit) + " (pid " +
                std::to_string(pid(culprit)) + ") failed";
      }
      return Errorf(sclRemoteError, "rank %zu (pid %d) %s%s", r, pid(int(r)),
                    why == kAborted ? "called sclCommAbort" : "failed and revoked the communicator",
                    cause.c_str())
          .with_culprit(culprit >= 0 ? culprit : int(r));
    }
    if (departed(int(r)) && int(r) == waiting_on) {
      return Errorf(sclRemoteError, "rank %zu (pid %d) destroyed the communicator", r, pid(int(r)))
          .with_culprit(int(r));
    }
  }
  return Status::Ok();
}

Status Waiter::wait(const Flag& flag, uint32_t target, int rank, const Deadline& deadline,
                    const std::function<std::string()>& what) const {
  if (seq_reached(flag.value.load(std::memory_order_acquire), target)) return Status::Ok();
  return wait_from(flag, target, rank, now_ns(), deadline, what);
}

Status Waiter::wait_ms(const Flag& flag, uint32_t target, int rank, int64_t timeout_ms,
                       const std::function<std::string()>& what) const {
  if (seq_reached(flag.value.load(std::memory_order_acquire), target)) return Status::Ok();
  const int64_t start = now_ns();
  return wait_from(flag, target, rank, start, Deadline::at_ns(start + timeout_ms * 1000000), what);
}

Status Waiter::wait_from(const Flag& flag, uint32_t target, int rank, int64_t start_ns,
                         const Deadline& deadline, const std::function<std::string()>& what) const {
  auto reached = [&] { return seq_reached(flag.value.load(std::memory_order_acquire), target); };
  const int64_t spin_until = start_ns + policy_.spin_ns;
  // Oversubscribed, the rank we wait for may need this very core: give it up at every check
  // instead of burning a slice of pauses first.
  const int checks_per_round = policy_.yield_while_spinning ? 1 : 64;
  do {
    for (int i = 0; i < checks_per_round; ++i) {
      if (reached()) return Status::Ok();
      cpu_relax();
    }
    if (policy_.yield_while_spinning) sched_yield();
  } while (now_ns() < spin_until);

  auto& mutable_flag = const_cast<Flag&>(flag);
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
    mutable_flag.sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = flag.value.load(std::memory_order_seq_cst);
    if (!seq_reached(seen, target)) {
      futex_wait(&mutable_flag.value, seen, std::min(kSleepSliceNs, deadline.remaining_ns() + 1));
    }
    mutable_flag.sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
}

}  // namespace stratacl
