// The soak's counters (soak.cc) and its report: every rank's figures summed over the world,
// printed by rank 0.
#pragma once

#include <cstdint>

#include "draw.h"
#include "harness.h"

namespace soak {

// One rank's counts.
struct Stats {
  uint64_t calls[kNumColls] = {};
  uint64_t failed[kNumColls] = {};
  uint64_t elements[kNumColls] = {};
  uint64_t stream_calls = 0;   // of the calls: queued on a stream
  uint64_t overlap_calls = 0;  // of the calls: blocking while streams ran
  uint64_t other_checks = 0;   // membership, stream status, async error
  uint64_t other_failed = 0;
  uint64_t iterations = 0;
  uint64_t comm_recreations = 0;
  uint64_t stream_recreations = 0;
  uint64_t stream_batches = 0;
  uint64_t bytes = 0;  // payload: count * element size, per call (the "size" drawn)
};

// The index of `c` in mp::kAllColls, which orders the counts above.
size_t coll_index(mp::Coll c);

// Sums every rank's `st` over `world` (collective), and rank 0 prints the summary: the run took
// `elapsed` s of `seconds_requested` (0: a count of iterations), drawn from `seed`. Returns the
// exit status: non-zero where any rank saw a failure or no call was checked.
int report(const Stats& st, const mp::Comm& world, uint64_t seed, double elapsed,
           double seconds_requested);

}  // namespace soak
