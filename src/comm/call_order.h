// Issue order on one communicator. A call takes a ticket when it is issued, on the thread that
// issues it, whatever stream will carry it; it runs when every earlier ticket is through. So the
// calls of a communicator run in the order they were issued (a NULL-stream call after stream
// work waits for that work), and every rank pairs the same calls. It also keeps calls apart: one
// runs at a time.
//
// A turn is waited for with the communicator's deadline, and given up when the communicator is
// revoked; a ticket given up is skipped when its turn comes. Nothing here spins: the fast path is
// one load, the slow path a condition variable.
//
// A call queued on a stream holds its ticket until its job begins there. A call that a stream's
// own thread issues (from a callback) and that would wait for such a ticket of the same stream
// could only wait out its deadline, since that job cannot begin before the callback returns: it
// is refused at once instead.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "core/status.h"
#include "exec/stream.h"

namespace stratacl {

class CallOrder {
 public:
  uint32_t take() { return next_.fetch_add(1, std::memory_order_relaxed); }
  // A ticket for a call queued on `queue`, held until started() says its job has begun.
  uint32_t take_queued(const Stream* queue);
  void started(uint32_t ticket);
  // sclInvalidUsage where the caller is a stream's own thread and a call queued on that stream
  // and not begun holds a ticket before `ticket` (the next one to be taken: before any): the
  // caller would wait for it in vain.
  Status queued_behind_caller(uint32_t ticket);
  Status queued_behind_caller() { return queued_behind_caller(next_.load()); }

  // Waits for `ticket`'s turn. Gives the ticket up and fails with what `stop()` says once it
  // says anything but ok (checked while waiting), or with sclTimeout after `timeout_ms`.
  Status enter(uint32_t ticket, int64_t timeout_ms, const std::function<Status()>& stop);
  // The holder of the turn is done: the next ticket's turn.
  void leave();

 private:
  void advance_locked(uint32_t next);
  Status queued_behind_caller_locked(uint32_t ticket) const;

  std::atomic<uint32_t> next_{0};
  std::atomic<uint32_t> serving_{0};
  std::atomic<uint32_t> waiters_{0};
  std::atomic<uint32_t> given_up_count_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<uint32_t> given_up_;               // tickets to skip when their turn comes (under mu_)
  std::map<uint32_t, const Stream*> queued_;  // take_queued()'s until started() (under mu_)
};

// Holds a turn for its scope.
class Turn {
 public:
  explicit Turn(CallOrder& order) : order_(&order) {}
  Turn(const Turn&) = delete;
  Turn& operator=(const Turn&) = delete;
  ~Turn() { order_->leave(); }

 private:
  CallOrder* order_;
};

}  // namespace stratacl
