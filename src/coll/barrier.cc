// Barrier: an empty eager step. Arrival is the whole of it: one round.
#include "coll/algorithms.h"
#include "coll/eager.h"
#include "coll/round.h"

namespace stratacl {

Status barrier(CollContext& c) {
  Call call;
  call.coll = Coll::kBarrier;
  return run_eager_step(c, call, EagerInput{}, [](const auto&) {});
}

}  // namespace stratacl
