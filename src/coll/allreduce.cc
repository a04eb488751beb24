#include "coll/algorithms.h"
#include "coll/round.h"
#include "coll/selection.h"

namespace stratacl {

Status allreduce(CollContext& c, const Call& call) {
  const size_t bytes = call.count * elem_size(call.dtype);
  return bytes <= oneshot_max_bytes(c.nranks) ? allreduce_oneshot(c, call)
                                              : allreduce_twoshot(c, call);
}

}  // namespace stratacl
