// Hierarchical reduce (hierarchical.h): every host reduces to the rank with the root's local
// index; that rail then reduces the hosts' partials, in host order, into the root's buffer.
#include "coll/algorithms.h"
#include "core/dtype.h"
#include "hier/hierarchical.h"

namespace stratacl::hier {

Status reduce(Context& c, const Call& call) {
  c.rail.go_on_through_failures();  // its steps go through Context::local_step, rail_step
  const net::Topology& t = c.topo();
  const size_t bytes = call.count * dtype_size(call.dtype);
  const int root_host = t.host_of(call.root), root_local = t.local_of(call.root);
  const bool root = c.world_rank == call.root;
  // The host's partial: in the root's own buffer on the root, in scratch on the other hosts.
  char* partial = root ? call.recv : t.local == root_local ? c.scratch.get(bytes) : nullptr;
  SCL_TRY(
      c.local_step(local_call(call, Coll::kReduce, call.send, partial,
                              root ? call.recv_kind : MemKind::kForeign, call.count, root_local)));
  if (t.local != root_local) return c.outcome();
  // Where a host's local step failed, its rail still runs (Context::local_step): the root takes
  // this call's partials off the network, a failed host's rail sends word of it instead of its
  // partial, and no host's next call meets this one's messages.
  SCL_TRY(c.rail_step(c.rail.reduce(partial, call.recv, call.count, call.dtype, summing(call.op),
                                    root_host, c.local.deadline())));
  if (root && c.outcome().ok()) finish_average(call, call.recv, call.count, c.world_ranks);
  return c.outcome();
}

}  // namespace stratacl::hier
