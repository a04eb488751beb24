#include "exec/team.h"

namespace stratacl {

Team::Team(int size, SpinPolicy policy) : size_(size < 1 ? 1 : size), policy_(policy) {
  results_.resize(size_t(size_));
}

Team::~Team() {
  stop_.store(true, std::memory_order_seq_cst);
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  wake_all(epoch_, epoch_sleepers_);
  for (std::thread& t : helpers_) t.join();
}

Status Team::run(int parts, FunctionRef<Status(int)> part) {
  const int n = size();
  bool expected = false;
  if (parts <= 1 || n == 1 || !busy_.compare_exchange_strong(expected, true)) {
    for (int i = 0; i < parts; ++i) SCL_TRY(part(i));
    return Status::Ok();
  }
  // First parallel job: start the helpers, each waiting for the epoch after this one.
  for (int i = int(helpers_.size()) + 1; i < n; ++i) {
    const uint32_t now = epoch_.load(std::memory_order_relaxed);
    helpers_.emplace_back([this, i, now] { helper_loop(i, now); });
  }
  parts_ = parts;
  part_ = &part;
  for (int i = 0; i < n; ++i) results_[size_t(i)] = Status::Ok();
  remaining_.store(uint32_t(n - 1), std::memory_order_relaxed);
  epoch_.fetch_add(1, std::memory_order_seq_cst);  // publishes parts_, part_, remaining_
  wake_all(epoch_, epoch_sleepers_);
  // The caller takes parts 0, n, 2n, ...; helpers with no part this time just check in.
  for (int i = 0; i < parts; i += n) {
    Status s = part(i);
    if (!s.ok() && results_[0].ok()) results_[0] = s;
  }
  for (uint32_t left; (left = remaining_.load(std::memory_order_acquire)) != 0;)
    wait_while_equal(remaining_, left, policy_, &remaining_sleepers_);
  busy_.store(false, std::memory_order_release);
  for (int i = 0; i < n; ++i)
    if (!results_[size_t(i)].ok()) return results_[size_t(i)];
  return Status::Ok();
}

void Team::helper_loop(int index, uint32_t seen) {
  for (;;) {
    wait_while_equal(epoch_, seen, policy_, &epoch_sleepers_);
    seen = epoch_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    const int n = size_;
    for (int i = index; i < parts_; i += n) {
      Status s = (*part_)(i);
      if (!s.ok() && results_[size_t(index)].ok()) results_[size_t(index)] = s;
    }
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1)
      wake_all(remaining_, remaining_sleepers_);
  }
}

}  // namespace stratacl
