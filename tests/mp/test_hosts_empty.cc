// Part of case `hosts` (test_hosts.cc): a call of no elements against its peers' count. The last
// rank allreduces 0 elements, the others 5: the call must fail with sclInvalidUsage on every rank
// within seconds, as on one host (where the step compares the counts). Before, the empty call
// returned at once, before the network: its rank returned success while its peers failed, and
// its call number fell one behind theirs. (Calls of count 0 on every rank, which must succeed,
// are in test_hosts.cc's first loop.)
#include <string>
#include <vector>

#include "calls.h"
#include "hosts.h"

namespace mp {

void empty_call_against_counted_fails_everywhere(const Comm& w, Tally& tally) {
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

}  // namespace mp
