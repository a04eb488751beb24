// Reduce: the root reduces every rank's input, read in place, in rank order; small ones go eager.
#include "reduce/reduce.h"

#include <vector>

#include "coll/algorithms.h"
#include "coll/eager.h"
#include "coll/input_tiles.h"
#include "coll/round.h"
#include "core/dtype.h"

namespace stratacl {

Status reduce_to_root(CollContext& c, const Call& call) {
  const size_t es = dtype_size(call.dtype);
  const bool root = c.rank == call.root;
  if (const size_t bytes = call.count * es; eager_fits(c, bytes)) {
    return run_eager_step(c, call, EagerInput{call.send.ptr, 0, 1, bytes}, [&](const auto& from) {
      if (root)
        reduce::reduce_n(call.recv, from.data(), c.nranks, call.count, call.dtype, call.op,
                         c.nranks);
    });
  }
  return for_each_round(c, call, 1, [&](Range r) -> Status {
    const size_t bytes = r.size() * es;
    const LocalBuffer my_in = call.send.at(r.begin * es);
    CallDesc d = make_desc(c, call);
    if (!root) publish_input(c, my_in, 0, 1, bytes, 0, &d);
    return run_step(c, d, [&](const std::vector<CallDesc>& descs) -> Status {
      if (!root) return Status::Ok();
      return reduce_inputs(c, descs, 0, my_in.ptr, r.size(), call, call.recv + r.begin * es);
    });
  });
}

}  // namespace stratacl
