// Hierarchical allreduce (hierarchical.h). Small counts (up to the rail's direct size): one local
// allreduce, then every rail reduces the host sums in one direct round (or log2 H rounds of
// recursive doubling, net/rail.h), so the call costs one local step and the rail's rounds
// (every rail carries the whole small buffer: redundant bytes, no extra round). Larger counts split
// into L equal shards plus a tail of fewer than L elements; the tail is reduced by every rank
// (local allreduce, then every rail), which costs at most L - 1 elements twice and keeps the shards
// equal for the local steps.
#include "coll/algorithms.h"
#include "core/dtype.h"
#include "hier/hierarchical.h"

namespace stratacl::hier {

Status allreduce(Context& c, const Call& call) {
  const net::Topology& t = c.topo();
  const size_t es = dtype_size(call.dtype);
  size_t shard = call.count / size_t(t.per_host), main = shard * size_t(t.per_host);
  size_t tail = call.count - main;
  if (call.count * es <= net::Rail::kDirectMaxBytes) {
    shard = 0;
    main = 0;
    tail = call.count;
  }
  if (shard > 0) {
    char* mine = call.recv + size_t(t.local) * shard * es;
    SCL_TRY(c.run_local(
        local_call(call, Coll::kReduceScatter, call.send, mine, call.recv_kind, shard)));
    SCL_TRY(c.rail.allreduce(mine, shard, call.dtype, summing(call.op), c.local.deadline()));
    finish_average(call, mine, shard, c.world_ranks);
    SCL_TRY(c.run_local(local_call(call, Coll::kAllGather, LocalBuffer{mine, call.recv_kind},
                                   call.recv, call.recv_kind, shard)));
  }
  if (tail > 0) {
    char* out = call.recv + main * es;
    SCL_TRY(c.run_local(
        local_call(call, Coll::kAllReduce, call.send.at(main * es), out, call.recv_kind, tail)));
    SCL_TRY(c.rail.allreduce(out, tail, call.dtype, summing(call.op), c.local.deadline()));
    finish_average(call, out, tail, c.world_ranks);
  }
  return Status::Ok();
}

}  // namespace stratacl::hier
