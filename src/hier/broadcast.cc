// Hierarchical broadcast (hierarchical.h): the root's rail carries the buffer to every host,
// then each host broadcasts it from the rank with the root's local index.
#include "coll/algorithms.h"
#include "core/dtype.h"
#include "hier/hierarchical.h"

namespace stratacl::hier {

Status broadcast(Context& c, const Call& call) {
  const net::Topology& t = c.topo();
  const size_t bytes = call.count * dtype_size(call.dtype);
  const int root_host = t.host_of(call.root), root_local = t.local_of(call.root);
  if (c.world_rank == call.root && call.send.ptr != call.recv) {
    c.local.copy(call.recv, call.send.ptr, bytes);
  }
  if (t.local == root_local)
    SCL_TRY(c.rail.broadcast(call.recv, bytes, root_host, c.local.deadline()));
  return c.run_local(local_call(call, Coll::kBroadcast, LocalBuffer{call.recv, call.recv_kind},
                                call.recv, call.recv_kind, call.count, root_local));
}

}  // namespace stratacl::hier
