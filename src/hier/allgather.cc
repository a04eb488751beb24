// Hierarchical allgather (hierarchical.h): our block travels our rail first, so each rank
// receives the blocks of its local index from every host; then one in-place local allgather per
// host fills in that host's other blocks.
#include <vector>

#include "coll/algorithms.h"
#include "core/dtype.h"
#include "hier/hierarchical.h"

namespace stratacl::hier {

Status allgather(Context& c, const Call& call) {
  const net::Topology& t = c.topo();
  const size_t bytes = call.count * dtype_size(call.dtype);
  auto block = [&](int h, int l) { return call.recv + size_t(t.world_of(h, l)) * bytes; };
  char* mine = block(t.host, t.local);
  if (call.send.ptr != mine) c.local.copy(mine, call.send.ptr, bytes);
  std::vector<char*> blocks;
  for (int h = 0; h < t.hosts; ++h) blocks.push_back(block(h, t.local));
  SCL_TRY(c.rail.allgather(blocks, bytes, c.local.deadline()));
  for (int h = 0; h < t.hosts; ++h) {
    SCL_TRY(c.run_local(local_call(call, Coll::kAllGather,
                                   LocalBuffer{block(h, t.local), call.recv_kind}, block(h, 0),
                                   call.recv_kind, call.count)));
  }
  return Status::Ok();
}

}  // namespace stratacl::hier
