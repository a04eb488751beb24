// The cost model that sizes a rank's worker team and cuts each call's work: data, not code. One
// thread copies at `thread_gbps`; the host's memory system tops out at `host_gbps` whatever the
// thread count; a helper woken from sleep costs `wake_us` before it copies a byte. A part must
// carry enough bytes to pay for its wake-up, and a rank gets no more helpers than its share of
// the cores and of the host's bandwidth can feed.
#pragma once

#include <cstddef>

namespace stratacl {

struct CostModel {
  double thread_gbps = 10.9;  // one thread's memcpy (measured: scl-info --calibrate)
  double host_gbps = 18.1;    // every core's memcpy together, on this 2-core kind of host
  double wake_us = 25.0;      // futex wake-up of a sleeping helper, this kind of host
  int cores = 1;              // cores this process may run on

  // The defaults above, with the cores and, when more than two, a host bandwidth scaled as this
  // host's two cores scale (0.66 of a thread per added core), until `STRATACL_HOST_GBPS` says
  // otherwise.
  static CostModel for_host(int cores, double host_gbps_override);

  // Threads per rank when STRATACL_THREADS is 0 (auto): the rank's share of the cores, less its
  // engines, but no more than its share of the host's bandwidth can keep busy.
  int auto_threads(int local_ranks, int engines) const;
  // The least bytes a part should carry: what one thread copies during a wake-up.
  size_t min_part_bytes() const;
  // Parts (workers) for a job of `bytes`, at most `team`: each carries min_part_bytes or more.
  int parts_for(size_t bytes, int team, size_t min_part) const;
};

}  // namespace stratacl
