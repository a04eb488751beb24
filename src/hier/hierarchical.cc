#include "hier/hierarchical.h"

#include "coll/algorithms.h"
#include "reduce/reduce.h"

namespace stratacl::hier {

Call local_call(const Call& world, Coll coll, LocalBuffer send, char* recv, MemKind recv_kind,
                size_t count, int root) {
  Call c;
  c.coll = coll;
  c.dtype = world.dtype;
  c.op = summing(world.op);
  c.root = root;
  c.count = count;
  c.send = send;
  c.recv = recv;
  c.recv_kind = recv_kind;
  return c;
}

Status Context::on_host(Status s) const {
  if (s.ok()) return s;
  const net::Topology& t = topo();
  return Status(s.code(), "host " + std::to_string(t.host) + " (local rank k is rank " +
                              std::to_string(t.world_of(t.host, 0)) + " + k): " + s.message());
}

sclRedOp_t summing(sclRedOp_t op) { return op == sclAvg ? sclSum : op; }

void finish_average(const Call& call, char* buf, size_t count, int world_ranks) {
  if (call.op != sclAvg || count == 0) return;
  const void* src = buf;
  reduce::reduce_n(buf, &src, 1, count, call.dtype, sclAvg, world_ranks);
}

Status barrier(Context& c) {
  SCL_TRY(c.on_host(stratacl::barrier(c.local)));
  if (c.topo().local == 0) SCL_TRY(c.rail.barrier(c.local.deadline()));
  return c.on_host(stratacl::barrier(c.local));
}

Status run(Context& c, const Call& call) {
  switch (call.coll) {
    case Coll::kAllReduce:
      return allreduce(c, call);
    case Coll::kAllGather:
      return allgather(c, call);
    case Coll::kBroadcast:
      return broadcast(c, call);
    case Coll::kReduce:
      return reduce(c, call);
    case Coll::kReduceScatter:
      return reduce_scatter(c, call);
    case Coll::kBarrier:
      return barrier(c);
    case Coll::kAlltoAll:
      return alltoall(c, call);
    case Coll::kAlltoAllv:
      return alltoallv(c, call);
    case Coll::kGather:
      return gather(c, call);
    case Coll::kScatter:
      return scatter(c, call);
    default:
      return Errorf(sclInvalidUsage, "%s across hosts is not supported yet (issue 12)",
                    coll_name(call.coll));
  }
}

}  // namespace stratacl::hier
