#include "exec/stream.h"

#include <utility>

#include "exec/spin_wait.h"

namespace stratacl {
namespace {

const SpinPolicy kStreamSpin{20000, /*yield=*/true};

thread_local const Stream* t_running = nullptr;  // set on each stream's own thread

}  // namespace

const Stream* Stream::running() { return t_running; }

Stream::Stream() : thread_([this] { loop(); }) {}

Stream::~Stream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  queued_.fetch_add(1, std::memory_order_seq_cst);  // a wake-up the loop reads as "look again"
  wake_all(queued_, thread_sleeps_);
  thread_.join();
}

void Stream::enqueue(std::function<Status()> work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
  }
  queued_.fetch_add(1, std::memory_order_seq_cst);
  wake_all(queued_, thread_sleeps_);
}

void Stream::loop() {
  t_running = this;
  uint32_t seen = 0;  // queued_ as last looked at
  for (;;) {
    wait_while_equal(queued_, seen, kStreamSpin, &thread_sleeps_);
    seen = queued_.load(std::memory_order_acquire);
    for (;;) {
      std::function<Status()> work;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (queue_.empty()) {
          if (stop_) return;
          break;
        }
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      Status s = work();
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!s.ok() && since_sync_.ok()) since_sync_ = s;
        if (!s.ok() && since_mark_.ok()) since_mark_ = s;
      }
      finished_.fetch_add(1, std::memory_order_seq_cst);
      wake_all(finished_, callers_sleep_);
    }
  }
}

Status Stream::synchronize() {
  // Every item queued so far: the count at the call, less the stop wake-up, which is no item.
  const uint32_t target = queued_.load(std::memory_order_acquire);
  for (;;) {
    const uint32_t done = finished_.load(std::memory_order_acquire);
    if (int32_t(done - target) >= 0) break;
    wait_while_equal(finished_, done, kStreamSpin, &callers_sleep_);
  }
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(since_sync_, Status::Ok());
}

bool Stream::idle() {
  return finished_.load(std::memory_order_acquire) == queued_.load(std::memory_order_acquire);
}

Status Stream::pending_error() {
  std::lock_guard<std::mutex> lock(mu_);
  return since_sync_;
}

Status Stream::take_error_since_mark() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(since_mark_, Status::Ok());
}

}  // namespace stratacl
