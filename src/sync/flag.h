// The unit of synchronisation between ranks: one cache line on which its owner publishes a
// monotonically increasing value (a futex word), with the result code that goes with it.
#pragma once

#include <atomic>
#include <cstdint>

namespace stratacl {

// Step numbers count up from 1. When they wrap they skip 0 and 1: kNoStep never names a step, so
// a line or slot that was never written can never look like the current step, even after 2^32
// steps; and consecutive steps keep alternating parity, which picks their eager slot.
constexpr uint32_t kNoStep = 0;
inline uint32_t next_step(uint32_t s) { return s + 1 == kNoStep ? 2 : s + 1; }

// `a` has reached `b` in wrap-around arithmetic.
inline bool seq_reached(uint32_t a, uint32_t b) { return int32_t(a - b) >= 0; }

// Only the owner writes a flag. Waiters that sleep on it announce themselves in the owner's
// doorbells (sync/doorbells.h), never in the line itself: peers map our lines read-only.
struct alignas(64) Flag {
  std::atomic<uint32_t> value{0};
  std::atomic<int32_t> status{0};  // sclResult_t that goes with `value` (done lines)
  // 1 + the CPU the owner ran on when it last published `value` (0: unknown, as in the zeroed
  // regions flags also live in). A waiter on the same CPU knows that the owner can only move on
  // when it gives the core up (sync/waiter.h). It rides on the line the waiter polls anyway, so
  // reading it costs nothing.
  std::atomic<int32_t> cpu_plus_one{0};
};
static_assert(sizeof(Flag) == 64);

}  // namespace stratacl
