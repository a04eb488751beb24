// AllReduce: eager for small payloads, else one-shot or two-shot by the selection table.
#include "coll/algorithms.h"
#include "coll/eager.h"
#include "coll/round.h"
#include "coll/selection.h"
#include "reduce/reduce.h"

namespace stratacl {

Status allreduce(CollContext& c, const Call& call) {
  const size_t bytes = call.count * elem_size(call.dtype);
  if (eager_fits(bytes)) {
    return run_eager_step(c, call, EagerInput{call.send, 0, 1, bytes}, [&](const auto& in) {
      reduce::reduce_n(call.recv, in.data(), c.nranks, call.count, call.dtype, call.op, c.nranks);
    });
  }
  return bytes <= oneshot_max_bytes(c.nranks) ? allreduce_oneshot(c, call)
                                              : allreduce_twoshot(c, call);
}

}  // namespace stratacl
