// Hierarchical allgather (hierarchical.h): our block travels our rail first, so each rank
// receives the blocks of its local index from every host; then the host's ranks exchange them.
// Large outputs: one in-place local allgather per host fills in that host's other blocks. Small
// ones: the rail's blocks land side by side in heap scratch (Context::packs), one local
// allgather of those runs replaces the H (each a wait for every rank of the host), and a copy
// puts the output in world order.
#include <vector>

#include "coll/algorithms.h"
#include "core/dtype.h"
#include "hier/hierarchical.h"

namespace stratacl::hier {
namespace {

Status allgather_one_phase(Context& c, const Call& call, size_t bytes) {
  const net::Topology& t = c.topo();
  const size_t run = size_t(t.hosts) * bytes;  // one rank's blocks, in host order
  const size_t gathered_at = (run + 63) & ~size_t(63);
  SCL_ASSIGN_OR_RETURN(char* runs, c.packs.get(gathered_at + run * size_t(t.per_host)));
  char* gathered = runs + gathered_at;  // every local rank's run, in local rank order
  c.local.copy(runs + size_t(t.host) * bytes, call.send.ptr, bytes);
  std::vector<char*> blocks;
  for (int h = 0; h < t.hosts; ++h) blocks.push_back(runs + size_t(h) * bytes);
  SCL_TRY(c.rail.allgather(blocks, bytes, c.local.deadline()));
  SCL_TRY(
      c.run_local(local_call(call, Coll::kAllGather, LocalBuffer{runs, MemKind::kHeap}, gathered,
                             MemKind::kHeap, call.count * size_t(t.hosts), kOnePhaseRoot)));
  copy_runs(c, gathered, call.recv, bytes, false);
  return Status::Ok();
}

}  // namespace

Status allgather(Context& c, const Call& call) {
  const net::Topology& t = c.topo();
  const size_t bytes = call.count * dtype_size(call.dtype);
  if (t.per_host > 1 && bytes * size_t(c.world_ranks) <= kOnePhaseMaxBytes) {
    return allgather_one_phase(c, call, bytes);
  }
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
