// Hierarchical reduce-scatter (hierarchical.h): local reduce-scatters leave each rank the host's
// partial for the block of its local index on every host; the rail exchanges the partials and
// reduces each rank's own block's (net::Rail::reduce_scatter). Large inputs: one local
// reduce-scatter per host's range of the input. Small ones: the input is copied into heap scratch
// (Context::packs) as one run per local rank of the H blocks it will be left with, and one
// local reduce-scatter of those runs replaces the H.
#include <vector>

#include "coll/algorithms.h"
#include "core/dtype.h"
#include "hier/hierarchical.h"

namespace stratacl::hier {
namespace {

// The host's partials, one block per host, side by side in `parts`.
Status reduce_locally_one_phase(Context& c, const Call& call, size_t bytes, char* parts) {
  const net::Topology& t = c.topo();
  const size_t run = size_t(t.hosts) * bytes;
  SCL_ASSIGN_OR_RETURN(char* runs, c.packs.get(run * size_t(t.per_host)));
  copy_runs(c, call.send.ptr, runs, bytes, true);
  return c.local_step(local_call(call, Coll::kReduceScatter, LocalBuffer{runs, MemKind::kHeap},
                                 parts, MemKind::kForeign, call.count * size_t(t.hosts),
                                 kOnePhaseRoot));
}

}  // namespace

Status reduce_scatter(Context& c, const Call& call) {
  c.rail.go_on_through_failures();  // its steps go through Context::local_step, rail_step
  const net::Topology& t = c.topo();
  const size_t bytes = call.count * dtype_size(call.dtype);
  std::vector<const char*> parts;
  if (t.per_host == 1) {
    // Alone on its host, a rank's partial for host h is its input's block h: the rail sends and
    // reduces it where it is, where a local step would copy the whole input first.
    for (int h = 0; h < t.hosts; ++h) parts.push_back(call.send.ptr + size_t(h) * bytes);
  } else {
    char* scratch = c.scratch.get(bytes * size_t(t.hosts));
    for (int h = 0; h < t.hosts; ++h) parts.push_back(scratch + size_t(h) * bytes);
    if (bytes * size_t(c.world_ranks) <= kOnePhaseMaxBytes) {
      SCL_TRY(reduce_locally_one_phase(c, call, bytes, scratch));
    } else {
      for (int h = 0; h < t.hosts; ++h) {
        const size_t range = size_t(t.world_of(h, 0)) * bytes;
        SCL_TRY(
            c.local_step(local_call(call, Coll::kReduceScatter, call.send.at(range),
                                    scratch + size_t(h) * bytes, MemKind::kForeign, call.count)));
      }
    }
  }
  SCL_TRY(c.rail_step(c.rail.reduce_scatter(parts, call.recv, call.count, call.dtype,
                                            summing(call.op), c.local.deadline())));
  if (c.outcome().ok()) finish_average(call, call.recv, call.count, c.world_ranks);
  return c.outcome();
}

}  // namespace stratacl::hier
