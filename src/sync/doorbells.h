// Where waiters announce that they sleep on a line of a rank's control block. The block is in the
// owner's heap, which peers map read-only; the doorbells are a parallel array of counters, one per
// 64-byte line of the block, in the owner's small control segment, which peers map read-write.
// They are the only memory of ours that peers write.
//
// A writer publishes a line, then wakes the line's sleepers only if its doorbell says there are
// any (Dekker: the writer stores the value, full fence, loads the doorbell; a waiter adds to the
// doorbell, full fence, loads the value; one of the two sees the other).
#pragma once

#include <atomic>
#include <cstdint>

#include "sync/control_block.h"

namespace stratacl {

using Doorbell = std::atomic<uint32_t>;

// A rank's block as its owner sees it: writable, with its doorbells.
struct OwnBlock {
  ControlBlock* cb = nullptr;
  Doorbell* doorbells = nullptr;
  Doorbell& doorbell(const void* line) const { return doorbells[line_of(cb, line)]; }
};

// A peer's block as we see it: read-only, with its doorbells (writable: we may sleep there).
struct PeerBlock {
  const ControlBlock* cb = nullptr;
  Doorbell* doorbells = nullptr;
  Doorbell& doorbell(const void* line) const { return doorbells[line_of(cb, line)]; }
};

// Publishes `value` on one of our lines and wakes its sleepers, if any.
void signal_flag(const OwnBlock& mine, Flag& flag, uint32_t value);
// Wakes a line's sleepers without changing it (revocation: they re-check and see it).
void wake_flag(const OwnBlock& mine, const Flag& flag);

}  // namespace stratacl
