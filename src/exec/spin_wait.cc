#include "exec/spin_wait.h"

#include <sched.h>

#include "core/deadline.h"
#include "sync/futex.h"

namespace stratacl {

void wait_while_equal(const std::atomic<uint32_t>& word, uint32_t value, const SpinPolicy& policy,
                      std::atomic<uint32_t>* sleepers) {
  if (word.load(std::memory_order_acquire) != value) return;
  const int64_t until = now_ns() + policy.spin_ns;
  for (int polls = 1;; ++polls) {
    if (word.load(std::memory_order_acquire) != value) return;
    if (policy.yield) {
      sched_yield();
    } else {
      cpu_relax();
    }
    if ((polls & 63) == 0 && now_ns() >= until) break;
  }
  auto* w = const_cast<std::atomic<uint32_t>*>(&word);
  sleepers->fetch_add(1, std::memory_order_seq_cst);
  // seq_cst on both sides: either the waker sees our sleeper count, or we see its new value.
  while (word.load(std::memory_order_seq_cst) == value) futex_wait(w, value, 100 * 1000 * 1000);
  sleepers->fetch_sub(1, std::memory_order_relaxed);
}

void wake_all(std::atomic<uint32_t>& word, const std::atomic<uint32_t>& sleepers) {
  if (sleepers.load(std::memory_order_seq_cst) != 0) futex_wake_all(&word);
}

}  // namespace stratacl
