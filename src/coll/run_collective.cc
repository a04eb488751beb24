#include "coll/algorithms.h"
#include "coll/step.h"

namespace stratacl {

const char* coll_name(Coll c) {
  switch (c) {
    case Coll::kAllReduce:
      return "allreduce";
    case Coll::kBroadcast:
      return "broadcast";
    case Coll::kReduce:
      return "reduce";
    case Coll::kAllGather:
      return "allgather";
    case Coll::kReduceScatter:
      return "reducescatter";
    case Coll::kAlltoAll:
      return "alltoall";
    case Coll::kAlltoAllv:
      return "alltoallv";
    case Coll::kGather:
      return "gather";
    case Coll::kScatter:
      return "scatter";
    case Coll::kBarrier:
      return "barrier";
    case Coll::kSplit:
      return "split";
    case Coll::kMoeCreate:
      return "moe-create";
    case Coll::kMoeDispatch:
      return "moe-dispatch";
    case Coll::kMoeCombine:
      return "moe-combine";
    default:
      return "unknown";
  }
}

Status run_collective(CollContext& c, const Call& call) {
  switch (call.coll) {
    case Coll::kAllReduce:
      return allreduce(c, call);
    case Coll::kBroadcast:
      return broadcast(c, call);
    case Coll::kReduce:
      return reduce_to_root(c, call);
    case Coll::kAllGather:
      return allgather(c, call);
    case Coll::kReduceScatter:
      return reduce_scatter(c, call);
    case Coll::kAlltoAll:
      return alltoall(c, call);
    case Coll::kAlltoAllv:
      return alltoallv(c, call);
    case Coll::kGather:
      return gather(c, call);
    case Coll::kScatter:
      return scatter(c, call);
    case Coll::kBarrier:
      return barrier(c);
    default:
      return Errorf(sclInternalError, "run_collective: unknown collective %u", unsigned(call.coll));
  }
}

Status run_refused(CollContext& c, const Call& call) {
  CallDesc d;
  d.sig.coll = uint32_t(call.coll);
  d.sig.round_bytes = c.round_bytes;
  sign_refused(d.sig, call.refused);
  // Reached only where every rank's call was refused: each has reported its own error.
  const Status s = run_step(c, d, [&](const std::vector<CallDesc>&) {
    return Errorf(sclInvalidUsage, "%s: refused on every rank", c.where().c_str());
  });
  return is_fatal(s) ? s : Status::Ok();
}

}  // namespace stratacl
