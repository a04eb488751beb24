// Hierarchical allgather (hierarchical.h): our block travels our rail first, so each rank
// receives the blocks of its local index from every host, in place in its output; then one local
// allgather of H runs (coll/call.h, Call::runs) fills in the other local indices of every host's
// blocks at once: one wait for the host's ranks, where an allgather per host's blocks waited H
// times, and no copy.
#include <algorithm>
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
  if (t.per_host == 1) return Status::Ok();
  const int per_step = runs_per_step(c.local.round_bytes, t.hosts, 1, dtype_size(call.dtype));
  for (int h = 0; h < t.hosts; h += per_step) {
    Call local = local_call(call, Coll::kAllGather, LocalBuffer{block(h, t.local), call.recv_kind},
                            block(h, 0), call.recv_kind, call.count);
    local.runs = std::min(per_step, t.hosts - h);
    SCL_TRY(c.run_local(local));
  }
  return Status::Ok();
}

}  // namespace stratacl::hier
