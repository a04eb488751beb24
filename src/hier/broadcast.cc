// Hierarchical broadcast (hierarchical.h). A large buffer is split over the rails: the root's host
// scatters it, block l to local rank l; every rail broadcasts its block, down the chain of hosts in
// the whole buffer's segment count where it goes by chain (and the root's rail the tail of fewer
// than L elements the count may leave); then every host allgathers the blocks in place (and
// broadcasts the tail from the root's local index). The host's L links carry 1/L of the buffer
// each, in parallel, and the local copies are the same bytes as one local broadcast's, spread over
// every rank; the root scatters from its input, where the other path first copies the whole
// buffer into its output. Other buffers: the root's rail carries the whole buffer, then each host
// broadcasts it from the rank with the root's local index.
#include "coll/algorithms.h"
#include "core/dtype.h"
#include "hier/hierarchical.h"

namespace stratacl::hier {
namespace {

Status broadcast_by_rails(Context& c, const Call& call, int root_host, int root_local) {
  c.rail.go_on_through_failures();  // its steps go through Context::local_step, rail_step
  const net::Topology& t = c.topo();
  const size_t es = dtype_size(call.dtype), per_host = size_t(t.per_host);
  const size_t block = call.count / per_host, tail = call.count - block * per_host;
  char* mine = call.recv + size_t(t.local) * block * es;
  char* tail_at = call.recv + per_host * block * es;
  // The root scatters straight from its input: its own block and the local allgather fill its
  // output, so only a tail is copied there first (it crosses from there).
  const bool root = c.world_rank == call.root;
  const LocalBuffer all = root ? call.send : LocalBuffer{call.recv, call.recv_kind};
  if (root && tail && call.send.ptr != call.recv) {
    c.local.copy(tail_at, call.send.ptr + per_host * block * es, tail * es);
  }
  // Where the root's host fails its scatter (a mismatch there), its rails send the other hosts
  // word of it instead of blocks (Context::local_step), and the call fails everywhere.
  if (t.host == root_host) {
    SCL_TRY(c.local_step(
        local_call(call, Coll::kScatter, all, mine, call.recv_kind, block, root_local)));
  }
  SCL_TRY(c.rail_step(
      c.rail.broadcast(mine, block * es, root_host, c.local.deadline(), call.count * es)));
  if (tail && t.local == root_local) {
    SCL_TRY(c.rail_step(c.rail.broadcast(tail_at, tail * es, root_host, c.local.deadline())));
  }
  SCL_TRY(
      c.local_step(local_call(call, Coll::kAllGather, LocalBuffer{mine, call.recv_kind}, call.recv,
                              call.recv_kind, block, kSplitBroadcastRoot + int(tail))));
  if (tail) {
    SCL_TRY(c.local_step(local_call(call, Coll::kBroadcast, LocalBuffer{tail_at, call.recv_kind},
                                    tail_at, call.recv_kind, tail, root_local)));
  }
  return c.outcome();
}

}  // namespace

bool broadcast_splits(const net::Topology& t, size_t count, size_t element_bytes) {
  return t.per_host > 1 && count / size_t(t.per_host) * element_bytes >= kSplitBroadcastMinBlock;
}

Status broadcast(Context& c, const Call& call) {
  const net::Topology& t = c.topo();
  const size_t es = dtype_size(call.dtype), bytes = call.count * es;
  const int root_host = t.host_of(call.root), root_local = t.local_of(call.root);
  if (broadcast_splits(t, call.count, es))
    return broadcast_by_rails(c, call, root_host, root_local);
  if (c.world_rank == call.root && call.send.ptr != call.recv) {
    c.local.copy(call.recv, call.send.ptr, bytes);
  }
  if (t.local == root_local)
    SCL_TRY(c.rail.broadcast(call.recv, bytes, root_host, c.local.deadline()));
  return c.run_local(local_call(call, Coll::kBroadcast, LocalBuffer{call.recv, call.recv_kind},
                                call.recv, call.recv_kind, call.count, root_local));
}

}  // namespace stratacl::hier
