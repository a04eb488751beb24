// A collective call as the algorithms see it: what to do, and the caller's buffers with their
// memory kinds (decided once, at the C API).
#pragma once

#include <cstddef>
#include <cstdint>

#include "fabric/memory_kind.h"
#include "stratacl/stratacl.h"

namespace stratacl {

enum class Coll : uint32_t {
  kAllReduce = 1,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kAlltoAllv,
  kGather,
  kScatter,
  kBarrier,
  kSplit,
  kMoeCreate,  // the MoE steps (src/moe/): the step protocol names them in its messages
  kMoeDispatch,
  kMoeCombine,
  kCount
};
const char* coll_name(Coll c);

// The scalar of a PreMulSum operator (sclRedOpCreatePreMulSum): each rank's input is multiplied
// by its scalar, a value of the call's dtype taken from `value` (host-immediate) or read from
// `at` when the call runs, and the call sums them (coll/premul.h).
struct PreMul {
  bool on = false;
  uint64_t value = 0;
  const void* at = nullptr;
  // An average across hosts whose input was divided by this (the world size) before any sum
  // (hier::average_first()): the call keeps sclAvg, so that its signature still tells it from a
  // sum, but nothing divides at its end.
  int divide_by = 0;
};

struct Call {
  Coll coll = Coll::kBarrier;
  sclDataType_t dtype = sclUint8;
  sclRedOp_t op = sclSum;
  int root = 0;
  size_t count = 0;  // per the NCCL argument of the same name
  LocalBuffer send;
  char* recv = nullptr;
  MemKind recv_kind = MemKind::kForeign;
  // AlltoAllv only.
  const size_t* sendcounts = nullptr;
  const size_t* sdispls = nullptr;
  const size_t* recvcounts = nullptr;
  const size_t* rdispls = nullptr;
  PreMul premul;  // allreduce, reduce and reduce-scatter
  // Allgather and reduce-scatter: `runs` of the collective in one step, run h's blocks after run
  // h - 1's (the hierarchy's local phase over every host's blocks at once, hier/allgather.cc).
  // Allgather: rank p's block of run h at send + h * nranks * count elements (so that in place,
  // at recv + p * count, every run's block already sits where it belongs), into recv +
  // (h * nranks + p) * count. Reduce-scatter: rank p's input block of run h at send +
  // (h * nranks + p) * count; run h's result at recv + h * count.
  int runs = 1;
  // A PreMulSum call's sum of the scaled inputs (coll/premul.h): `op` is sclSum, but its
  // signature says kPreMulSumSig, so that it never pairs with a plain sum on another rank.
  bool premultiplied = false;
  // Refused on this rank for its arguments (why; sclSuccess: not refused). It still takes its
  // turn, with none of its buffers (run_refused(), coll/algorithms.h), so that its peers fail the
  // same call instead of pairing it with this rank's next one.
  sclResult_t refused = sclSuccess;
};

constexpr int kPreMulSumSig = sclNumOps;
// The op a call's signature carries (the step's, and the hosts' rail tags).
inline int signed_op(const Call& c) { return c.premultiplied ? kPreMulSumSig : int(c.op); }

}  // namespace stratacl
