// One rank's standing in a communicator: revocation, abort and departure (docs/DESIGN.md,
// "Synchronisation", invariant 4: failure revokes). The first cause wins, locally and in our
// control block, with its culprit, so that every peer names the rank that caused it. Thread-safe:
// sclCommAbort may come from any thread while a call is blocked.
#pragma once

#include <atomic>
#include <mutex>
#include <vector>

#include "core/status.h"
#include "sync/doorbells.h"
#include "sync/liveness.h"
#include "sync/waiter.h"

namespace stratacl {

class Membership {
 public:
  Membership() = default;
  // `lines`: how many lines our block (core and regions) spans, for waking its sleepers.
  void bind(OwnBlock mine, size_t lines) { mine_ = mine, lines_ = lines; }

  // Every peer's pending and later calls fail with sclRemoteError; ours fail with `why`.
  void revoke(const Status& why);
  // sclCommAbort: our own waits exit at once, then the communicator is revoked.
  void abort();
  bool aborted() const { return aborted_.load(std::memory_order_acquire) != 0; }
  const std::atomic<uint32_t>* abort_flag() const { return &aborted_; }
  // The first cause of revocation, or ok. Cheap when nothing happened (the fast path of a call).
  Status revoked() const;

  // The departure barrier of destroy (and of a failed init): announces departure, revokes, then
  // waits until every peer departed or died, so none still reads our blocks. It only reads peers'
  // memory: a peer that passed the barrier first may have freed its block already. Bounded by
  // `timeout_ms` (2 s at most after an abort); false when it ran out, and then our blocks must be
  // leaked rather than freed. Ranks marked in `left_out` (which a shrink excluded) are not waited
  // for.
  bool depart(const Waiter& waiter, const Liveness& live, int nranks, int rank, int64_t timeout_ms,
              const std::vector<bool>& left_out = {});

 private:
  void wake_sleepers() const;

  OwnBlock mine_;
  size_t lines_ = 0;
  std::atomic<uint32_t> aborted_{0};
  std::atomic<bool> revoked_{false};  // cause_ is set (read without the mutex)
  mutable std::mutex mu_;
  Status cause_;
};

}  // namespace stratacl
