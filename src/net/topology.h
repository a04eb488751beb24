// Where the ranks of a communicator live: which host each is on, and its index there. Hosts are
// numbered in the order of their lowest rank. The hierarchical algorithms need every host to hold
// the same number of ranks, numbered consecutively (host h holds ranks h*L .. h*L+L-1), which is
// how torchrun, stratarun, Slurm and mpirun's default mapping place them. Any other layout runs
// on nodes (nodes()): each run of consecutive ranks on one host is cut into nodes of the size
// that divides every run, the hierarchy's "hosts", whose ranks share memory and reach other
// nodes, on their host too, through the provider. A group of 4 ranks of one host and 2 of
// another runs as 3 nodes of 2; one of 2 and 1 (3 ranks of 2 hosts x 2), or ranks mapped
// round-robin over hosts, as nodes of one rank: flat. Any group works, as in NCCL (which, unlike
// this, keeps a host's fast path whatever the order). A communicator split or shrunk from
// another has nodes within the parent's: flat where the parent is.
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
  // The "hosts" are nodes cut from hosts (nodes()), which messages then name as nodes.
  bool cut = false;
  const char* unit() const { return cut ? "node" : "host"; }
  int world_of(int h, int l) const { return h * per_host + l; }
  int host_of(int world) const { return world / per_host; }
  int local_of(int world) const { return world % per_host; }

  // From every rank's host identity, in rank order, and our rank: an error naming the rule where
  // the layout breaks it.
  static Result<Topology> of(const std::vector<uint64_t>& host_ids, int me);
  // The nodes to build a communicator on: `host_ids` where they are laid out as of() needs,
  // otherwise each rank's node, numbered 0, 1, ... in rank order (rank r's is r / g, g the
  // greatest common divisor of the runs of consecutive ranks on one host).
  static std::vector<uint64_t> nodes(const std::vector<uint64_t>& host_ids);
};

}  // namespace stratacl::net
