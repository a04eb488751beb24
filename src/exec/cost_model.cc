#include "exec/cost_model.h"

#include <algorithm>
#include <cmath>

namespace stratacl {

CostModel CostModel::for_host(int cores, double host_gbps_override) {
  CostModel m;
  m.cores = std::max(1, cores);
  if (host_gbps_override > 0) {
    m.host_gbps = host_gbps_override;
  } else {
    // Two cores give 18.1 GB/s against 2 x 10.9: each added core adds 0.66 of a thread's copy.
    const double per_added = (m.host_gbps - m.thread_gbps) / m.thread_gbps;
    m.host_gbps = m.thread_gbps * (1.0 + per_added * double(m.cores - 1));
  }
  return m;
}

int CostModel::auto_threads(int local_ranks, int engines) const {
  const int ranks = std::max(1, local_ranks);
  const int core_share = cores / ranks - engines;
  const int bandwidth_share = int(std::ceil(host_gbps / (double(ranks) * thread_gbps)));
  return std::clamp(std::min(core_share, bandwidth_share), 1, 64);
}

size_t CostModel::min_part_bytes() const {
  return size_t(thread_gbps * wake_us * 1000.0);  // GB/s x µs = kB
}

int CostModel::parts_for(size_t bytes, int team, size_t min_part) const {
  if (team <= 1) return 1;
  if (min_part == 0) return team;
  return int(std::clamp<size_t>(bytes / min_part, 1, size_t(team)));
}

}  // namespace stratacl
