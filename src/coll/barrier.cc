// Barrier: an empty step. Arrival and the done-count are the whole of it.
#include "coll/algorithms.h"
#include "coll/round.h"
#include "coll/step.h"

namespace stratacl {

Status barrier(CollContext& c) {
  Call call;
  call.coll = Coll::kBarrier;
  return run_step(c, make_desc(c, call), [](const std::vector<CallDesc>&) { return Status::Ok(); });
}

}  // namespace stratacl
