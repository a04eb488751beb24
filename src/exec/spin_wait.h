// Waiting inside one process for a counter another thread moves: spin briefly, then sleep on a
// futex, the same policy as waits on peers (sync/waiter.h). Used by the worker team and the copy
// engine, whose threads must never burn a core a rank needs, nor quantise to scheduler ticks.
// No deadline, abort or liveness exit: what is waited for here is local work (a job's parts, a
// queued copy) that never waits on a peer, so it always ends; waits on peers go through Waiter.
#pragma once

#include <atomic>
#include <cstdint>

namespace stratacl {

struct SpinPolicy {
  int64_t spin_ns = 20000;
  bool yield = false;  // oversubscribed: give the core away between polls
};

// Waits while word == `value`. Sleepers are counted in *sleepers so that wakers skip the system
// call when nobody sleeps.
void wait_while_equal(const std::atomic<uint32_t>& word, uint32_t value, const SpinPolicy& policy,
                      std::atomic<uint32_t>* sleepers);
// Wakes every thread asleep on `word`, if any sleeps.
void wake_all(std::atomic<uint32_t>& word, const std::atomic<uint32_t>& sleepers);

}  // namespace stratacl
