// Part of case `hosts` (test_hosts.cc): calls of no elements across hosts.
//   - Every collective of count 0 on every rank succeeds and writes nothing.
//   - An allreduce of count 0 on the last rank against the others' 5 fails with sclInvalidUsage
//     on every rank within seconds, as on one host (where the step compares the counts). Before,
//     the empty call returned at once, before the network: its rank returned success while its
//     peers failed, and its call number fell one behind theirs.
#include <algorithm>
#include <string>
#include <vector>

#include "calls.h"
#include "hosts.h"

namespace mp {
namespace {

sclResult_t call_empty(Coll coll, const int32_t* in, int32_t* out, size_t count, sclComm_t c) {
  switch (coll) {
    case Coll::kAllReduce:
      return sclAllReduce(in, out, count, sclInt32, sclSum, c, nullptr);
    case Coll::kBroadcast:
      return sclBroadcast(in, out, count, sclInt32, 0, c, nullptr);
    case Coll::kReduce:
      return sclReduce(in, out, count, sclInt32, sclSum, 0, c, nullptr);
    case Coll::kAllGather:
      return sclAllGather(in, out, count, sclInt32, c, nullptr);
    case Coll::kReduceScatter:
      return sclReduceScatter(in, out, count, sclInt32, sclSum, c, nullptr);
    case Coll::kAlltoAll:
      return sclAlltoAll(in, out, count, sclInt32, c, nullptr);
    case Coll::kGather:
      return sclGather(in, out, count, sclInt32, 0, c, nullptr);
    default:
      return sclScatter(in, out, count, sclInt32, 0, c, nullptr);
  }
}

void every_empty_call_succeeds(const Comm& w, Tally& tally) {
  const std::vector<int32_t> in(8, w.rank + 1);
  for (Coll coll : {Coll::kAllReduce, Coll::kBroadcast, Coll::kReduce, Coll::kAllGather,
                    Coll::kReduceScatter, Coll::kAlltoAll, Coll::kGather, Coll::kScatter}) {
    std::vector<int32_t> out(8 * size_t(w.n), -1);
    const sclResult_t r = call_empty(coll, in.data(), out.data(), 0, w.comm);
    const CallInfo info{coll_name(coll), sclInt32, -1, 0, -1, "count 0 on every rank"};
    tally.expect(r == sclSuccess, info,
                 std::string(sclGetErrorString(r)) + ": " + sclGetLastError(w.comm));
    tally.expect(std::all_of(out.begin(), out.end(), [](int32_t v) { return v == -1; }), info,
                 "an empty call wrote into the output");
  }
}

void empty_against_counted_fails_everywhere(const Comm& w, Tally& tally) {
  const size_t count = w.rank == w.n - 1 ? 0 : 5;
  std::vector<int32_t> in(5, w.rank + 1), out(5, -1);
  sclComm_t child = nullptr;
  MP_OK(sclCommSplit(w.comm, 0, w.rank, &child, nullptr));
  const double t0 = now();
  const sclResult_t r =
      sclAllReduce(in.data(), out.data(), count, sclInt32, sclSum, child, nullptr);
  const double took = now() - t0;
  const CallInfo info{"allreduce", sclInt32, int(sclSum),
                      count,       -1,       "count 0 on the last rank, 5 on the others"};
  tally.expect(r == sclInvalidUsage, info,
               std::string(sclGetErrorString(r)) + ": " + sclGetLastError(child));
  tally.expect(took < 10, info, "the call took " + std::to_string(took) + " s");
  MP_OK(sclCommDestroy(child));
}

}  // namespace

void empty_calls_across_hosts(const Comm& w, Tally& tally) {
  every_empty_call_succeeds(w, tally);
  empty_against_counted_fails_everywhere(w, tally);
}

}  // namespace mp
