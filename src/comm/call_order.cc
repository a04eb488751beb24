#include "comm/call_order.h"

#include <chrono>

#include "core/deadline.h"

namespace stratacl {

uint32_t CallOrder::take_queued(const Stream* queue) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t ticket = take();
  queued_.emplace(ticket, queue);
  return ticket;
}

void CallOrder::started(uint32_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  queued_.erase(ticket);
}

Status CallOrder::queued_behind_caller(uint32_t ticket) {
  if (!Stream::running()) return Status::Ok();
  std::lock_guard<std::mutex> lock(mu_);
  return queued_behind_caller_locked(ticket);
}

Status CallOrder::queued_behind_caller_locked(uint32_t ticket) const {
  const Stream* own = Stream::running();
  if (!own) return Status::Ok();
  int ahead = 0;
  for (const auto& [held, queue] : queued_) ahead += queue == own && int32_t(held - ticket) < 0;
  if (ahead == 0) return Status::Ok();
  return Errorf(sclInvalidUsage,
                "called from a callback of a stream on which %d earlier call(s) of this "
                "communicator wait behind the callback: they cannot begin before it returns, and "
                "this call would wait for them (queue it on that stream, or issue it after the "
                "callback)",
                ahead);
}

Status CallOrder::enter(uint32_t ticket, int64_t timeout_ms, const std::function<Status()>& stop) {
  if (serving_.load(std::memory_order_acquire) == ticket) return Status::Ok();
  std::unique_lock<std::mutex> lock(mu_);
  const Deadline deadline = Deadline::after_ms(timeout_ms);
  // Dekker with leave(): we count ourselves, then look; it moves serving_, then looks for us.
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  // Once: the tickets before ours were all taken (and held) before we locked, and those our own
  // stream holds cannot begin while we wait.
  Status outcome = queued_behind_caller_locked(ticket);
  for (;;) {
    if (outcome.ok() && serving_.load(std::memory_order_seq_cst) == ticket) break;
    if (outcome.ok()) outcome = stop();
    if (outcome.ok() && deadline.expired()) {
      outcome = Errorf(sclTimeout,
                       "timed out waiting for the calls issued before it on this communicator "
                       "(%u of them are still ahead)",
                       ticket - serving_.load());
    }
    if (!outcome.ok()) {
      given_up_.insert(ticket);
      given_up_count_.fetch_add(1, std::memory_order_seq_cst);
      break;
    }
    cv_.wait_for(lock, std::chrono::milliseconds(10));
  }
  waiters_.fetch_sub(1, std::memory_order_relaxed);
  return outcome;
}

void CallOrder::advance_locked(uint32_t next) {
  while (given_up_.erase(next)) {
    given_up_count_.fetch_sub(1, std::memory_order_relaxed);
    ++next;
  }
  serving_.store(next, std::memory_order_seq_cst);
  cv_.notify_all();
}

void CallOrder::leave() {
  const uint32_t next = serving_.load(std::memory_order_relaxed) + 1;
  if (given_up_count_.load(std::memory_order_seq_cst) == 0) {
    serving_.store(next, std::memory_order_seq_cst);
    if (waiters_.load(std::memory_order_seq_cst) == 0) return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  advance_locked(given_up_count_.load() == 0 ? serving_.load() : next);
}

}  // namespace stratacl
