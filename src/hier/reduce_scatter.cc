// Hierarchical reduce-scatter (hierarchical.h): one local reduce-scatter per host's range of the
// input leaves each rank the host's partial for the block of its local index on every host; the
// rail exchanges the partials and each rank reduces its own block's in host order.
#include <vector>

#include "coll/algorithms.h"
#include "core/dtype.h"
#include "hier/hierarchical.h"

namespace stratacl::hier {

Status reduce_scatter(Context& c, const Call& call) {
  const net::Topology& t = c.topo();
  const size_t bytes = call.count * dtype_size(call.dtype);
  char* scratch = c.scratch.get(bytes * size_t(t.hosts));
  std::vector<char*> parts;
  for (int h = 0; h < t.hosts; ++h) {
    parts.push_back(scratch + size_t(h) * bytes);
    const size_t range = size_t(t.world_of(h, 0)) * bytes;
    SCL_TRY(c.run_local(local_call(call, Coll::kReduceScatter, call.send.at(range), parts.back(),
                                   MemKind::kForeign, call.count)));
  }
  SCL_TRY(c.rail.reduce_scatter(parts, call.recv, call.count, call.dtype, summing(call.op),
                                c.local.deadline()));
  finish_average(call, call.recv, call.count, c.world_ranks);
  return Status::Ok();
}

}  // namespace stratacl::hier
