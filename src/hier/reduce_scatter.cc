// Hierarchical reduce-scatter (hierarchical.h): one local reduce-scatter of H runs, one per
// host's range of the input (coll/call.h, Call::runs), leaves each rank the host's partial for
// the block of its local index on every host, in one wait for the host's ranks; the rail
// exchanges the partials and reduces each rank's own block's (net::Rail::reduce_scatter).
#include <algorithm>
#include <vector>

#include "coll/algorithms.h"
#include "core/dtype.h"
#include "hier/hierarchical.h"

namespace stratacl::hier {

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
    const int per_step =
        runs_per_step(c.local.round_bytes, t.hosts, size_t(t.per_host), dtype_size(call.dtype));
    for (int h = 0; h < t.hosts; h += per_step) {
      Call local =
          local_call(call, Coll::kReduceScatter, call.send.at(size_t(t.world_of(h, 0)) * bytes),
                     scratch + size_t(h) * bytes, MemKind::kForeign, call.count);
      local.runs = std::min(per_step, t.hosts - h);
      SCL_TRY(c.local_step(local));
    }
  }
  SCL_TRY(c.rail_step(c.rail.reduce_scatter(parts, call.recv, call.count, call.dtype,
                                            summing(call.op), c.local.deadline())));
  if (c.outcome().ok()) finish_average(call, call.recv, call.count, c.world_ranks);
  return c.outcome();
}

}  // namespace stratacl::hier
