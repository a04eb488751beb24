// Send/receive across hosts: operations with ranks of this host go through the intra-host
// single-copy path (their peers renumbered within the host); the others are network messages,
// matched per pair in posting order. The host's part runs first, on every rank alike, and the
// network part runs whatever the host's part returned.
#include <vector>

#include "core/dtype.h"
#include "hier/hierarchical.h"

namespace stratacl::hier {

Status p2p(Context& c, P2PState& state, std::span<const P2POp> ops) {
  const net::Topology& t = c.topo();
  const int first = t.world_of(t.host, 0);
  std::vector<P2POp> local;
  std::vector<net::Transfer> remote;
  for (const P2POp& op : ops) {
    const size_t bytes = op.count * dtype_size(op.dtype);
    if (t.host_of(op.peer) == t.host) {
      local.push_back(op);
      local.back().peer = op.peer - first;
    } else {
      remote.push_back(op.is_send ? net::Rail::send_to(op.peer, op.send.ptr, bytes)
                                  : net::Rail::recv_from(op.peer, op.recv, bytes));
    }
  }
  const Status here =
      local.empty() ? Status::Ok() : c.on_host(stratacl::run_p2p(c.local, state, local));
  // The network part runs even when the host's part failed: its transfers are numbered per pair
  // of ranks, and skipping them would pair the peers' transfers of this call with our next.
  const Status across = c.rail.point_to_point(remote, c.local.deadline());
  return here.ok() ? across : here;
}

}  // namespace stratacl::hier
