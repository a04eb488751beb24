#include "sync/membership.h"

#include <time.h>

#include <algorithm>

#include "sync/futex.h"

namespace stratacl {

void Membership::revoke(const Status& why) {
  ControlBlock* me = mine_.cb;
  {
    // A later revocation (say, by destroy) must not overwrite the culprit peers report.
    std::lock_guard<std::mutex> lock(mu_);
    if (cause_.ok()) {
      cause_ = why;
      revoked_.store(true, std::memory_order_release);
      if (me && me->revoked.load(std::memory_order_relaxed) == kNotRevoked) {
        me->culprit.store(why.culprit(), std::memory_order_relaxed);
        const Revocation as = aborted()                       ? kAborted
                              : why.code() == sclInvalidUsage ? kMismatch
                                                              : kFailed;
        me->revoked.store(as, std::memory_order_seq_cst);
      }
    }
  }
  wake_sleepers();
}

// Peers sleeping on our lines wake, re-check and see the revocation. Only lines with a sleeper
// are touched, so revoking a large communicator costs a few system calls, not one per line.
void Membership::wake_sleepers() const {
  if (!mine_.cb) return;
  for (size_t i = 0; i < lines_; ++i) {
    if (mine_.doorbells[i].load(std::memory_order_seq_cst) == 0) continue;
    auto* word =
        reinterpret_cast<std::atomic<uint32_t>*>(reinterpret_cast<char*>(mine_.cb) + 64 * i);
    futex_wake_all(word);
  }
}

void Membership::abort() {
  aborted_.store(1, std::memory_order_release);
  revoke(Errorf(sclRemoteError, "the communicator was aborted (sclCommAbort)"));
}

Status Membership::revoked() const {
  if (!revoked_.load(std::memory_order_acquire) && !aborted()) return Status::Ok();
  std::lock_guard<std::mutex> lock(mu_);
  if (!cause_.ok()) {
    return Status(cause_.code(),
                  "the communicator was revoked by an earlier error: " + cause_.message());
  }
  return Errorf(sclRemoteError, "the communicator was aborted");
}

bool Membership::depart(const Waiter& waiter, const Liveness& live, int nranks, int rank,
                        int64_t timeout_ms, const std::vector<bool>& left_out) {
  ControlBlock* me = mine_.cb;
  uint32_t expected = kNotRevoked;
  me->revoked.compare_exchange_strong(expected, kDeparted);
  signal_flag(mine_, me->depart, 1);
  revoke(Errorf(sclInvalidUsage, "the communicator was destroyed"));
  // No futex and no doorbell here: a peer that passed the barrier first frees its block, and a
  // write there would land in whatever is allocated next. A block whose identity changed was
  // freed by a departed owner.
  const Deadline deadline =
      Deadline::after_ms(aborted() ? std::min<int64_t>(timeout_ms, 2000) : timeout_ms);
  for (int p = 0; p < nranks; ++p) {
    if (p == rank || (size_t(p) < left_out.size() && left_out[size_t(p)])) continue;
    int64_t nap_ns = 1000;
    while (!waiter.departed(p)) {
      if (live.is_dead(p)) break;
      if (deadline.expired()) return false;
      timespec ts{0, long(nap_ns)};
      nanosleep(&ts, nullptr);
      nap_ns = std::min<int64_t>(nap_ns * 2, 1000000);
    }
  }
  return true;
}

}  // namespace stratacl
