// Gather and scatter across hosts: the root's host gathers (scatters) its own ranks' blocks
// through the intra-host algorithm; every other rank's block travels between it and the root
// over the network, all in one batch at the root; blocks of the one-sided size are written
// straight into the root's output (gather) or the rank's (scatter).
#include <vector>

#include "coll/algorithms.h"
#include "core/dtype.h"
#include "hier/hierarchical.h"

namespace stratacl::hier {
namespace {

// The root's network batch: one transfer per rank on another host (recv: gather, send: scatter);
// such a rank's batch: its one transfer with the root.
std::vector<net::Transfer> root_batch(Context& c, const Call& call, bool gather) {
  const net::Topology& t = c.topo();
  const size_t bytes = call.count * dtype_size(call.dtype);
  std::vector<net::Transfer> batch;
  const int root_host = t.host_of(call.root);
  if (c.world_rank == call.root) {
    for (int w = 0; w < c.world_ranks; ++w) {
      if (t.host_of(w) == root_host) continue;
      batch.push_back(gather ? net::Rail::recv_from(w, call.recv + size_t(w) * bytes, bytes)
                             : net::Rail::send_to(w, call.send.ptr + size_t(w) * bytes, bytes));
    }
  } else if (t.host != root_host) {
    batch.push_back(gather ? net::Rail::send_to(call.root, call.send.ptr, bytes)
                           : net::Rail::recv_from(call.root, call.recv, bytes));
  }
  return batch;
}

}  // namespace

Status gather(Context& c, const Call& call) {
  c.rail.go_on_through_failures();  // its steps go through Context::local_step, rail_step
  const net::Topology& t = c.topo();
  const size_t bytes = call.count * dtype_size(call.dtype);
  if (t.host == t.host_of(call.root)) {
    const bool root = c.world_rank == call.root;
    char* host_blocks = root ? call.recv + size_t(t.world_of(t.host, 0)) * bytes : nullptr;
    SCL_TRY(c.local_step(local_call(call, Coll::kGather, call.send, host_blocks, call.recv_kind,
                                    call.count, t.local_of(call.root))));
  }
  std::vector<net::Transfer> batch = root_batch(c, call, true);
  const int senders = c.world_ranks - t.per_host;  // to the root, every rank of the other hosts
  SCL_TRY(c.rail_step(c.rail.exchange_even(batch, bytes, senders, c.local.deadline())));
  return c.outcome();
}

Status scatter(Context& c, const Call& call) {
  c.rail.go_on_through_failures();  // its steps go through Context::local_step, rail_step
  const net::Topology& t = c.topo();
  const size_t bytes = call.count * dtype_size(call.dtype);
  if (t.host == t.host_of(call.root)) {
    const bool root = c.world_rank == call.root;
    const LocalBuffer host_blocks =
        root ? call.send.at(size_t(t.world_of(t.host, 0)) * bytes) : call.send;
    SCL_TRY(c.local_step(local_call(call, Coll::kScatter, host_blocks, call.recv, call.recv_kind,
                                    call.count, t.local_of(call.root))));
  }
  std::vector<net::Transfer> batch = root_batch(c, call, false);
  SCL_TRY(c.rail_step(c.rail.exchange_even(batch, bytes, 1, c.local.deadline())));
  return c.outcome();
}

}  // namespace stratacl::hier
