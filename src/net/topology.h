// Where the ranks of a communicator live: which host each is on, and its index there. Hosts are
// numbered in the order of their lowest rank. The hierarchical algorithms need every host to hold
// the same number of ranks, numbered consecutively (host h holds ranks h*L .. h*L+L-1), which is
// how torchrun, stratarun, Slurm and mpirun's default mapping place them. Any other layout (a
// group of 3 ranks of 2 hosts x 2, ranks mapped round-robin over hosts) runs with every rank its
// own network node (nodes()): flat, each rank of a host reaching the others through the provider
// instead of shared memory. Any group works, as in NCCL (which, unlike this, keeps a node's fast
// path whatever the order); a communicator split or shrunk from a flat one is flat too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace stratacl::net {

struct Topology {
  int hosts = 1;
  int per_host = 1;  // L
  int host = 0;      // ours
  int local = 0;     // our index on our host
  int world_of(int h, int l) const { return h * per_host + l; }
  int host_of(int world) const { return world / per_host; }
  int local_of(int world) const { return world % per_host; }

  // From every rank's host identity, in rank order, and our rank: an error naming the rule where
  // the layout breaks it.
  static Result<Topology> of(const std::vector<uint64_t>& host_ids, int me);
  // The hosts to build a communicator on: `host_ids` where they are laid out as of() needs,
  // otherwise 0, 1, ..., n - 1 (every rank its own node).
  static std::vector<uint64_t> nodes(const std::vector<uint64_t>& host_ids);
};

}  // namespace stratacl::net
