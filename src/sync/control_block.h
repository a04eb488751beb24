// Per-communicator, per-rank control block. It lives in the owning rank's heap, which peers map
// read-only: every line is written by its owner alone. A block is these core lines, followed by
// the regions that the protocols above declare (sync/region.h).
#pragma once

#include <atomic>
#include <cstdint>

#include "sync/flag.h"

namespace stratacl {

// Why a rank's `revoked` word is set. kMismatch: it failed because the ranks' calls did not match
// (sclInvalidUsage), which its peers then report as such.
enum Revocation : uint32_t {
  kNotRevoked = 0,
  kAborted = 1,
  kFailed = 2,
  kDeparted = 3,
  kMismatch = 4
};

struct ControlBlock {
  Flag arrive;    // the step whose descriptor is published
  Flag progress;  // tiles this rank has finished, counted over the communicator's life
  Flag done;      // the last step whose buffers peers have stopped using; status = result
  Flag depart;    // 1 once this rank is destroying the communicator
  // Random identity of this block, scrubbed to 0 before the block is freed. A peer that finds a
  // different value knows the owner has left and the memory may hold anything now.
  std::atomic<uint64_t> instance{0};
  alignas(64) std::atomic<uint32_t> revoked{0};  // non-zero: see Revocation
  std::atomic<int32_t> culprit{-1};              // the rank whose failure caused it, if known
};

// The line of `cb` that `p` lies on (doorbells are indexed by it).
inline size_t line_of(const ControlBlock* cb, const void* p) {
  return size_t(static_cast<const char*>(p) - reinterpret_cast<const char*>(cb)) / 64;
}

}  // namespace stratacl
