// Reduce: the root reduces every rank's input, read in place, in rank order.
#include <vector>

#include "coll/algorithms.h"
#include "coll/round.h"
#include "reduce/reduce.h"

namespace stratacl {

Status reduce_to_root(CollContext& c, const Call& call) {
  const size_t es = elem_size(call.dtype);
  const bool root = c.rank == call.root;
  return for_each_round(c, call, 1, [&](Range r) -> Status {
    const size_t bytes = r.size() * es;
    const char* my_in = call.send + r.begin * es;
    CallDesc d = make_desc(c, call);
    if (!root) publish_input(c, my_in, 0, 1, bytes, 0, &d);
    return run_step(c, d, [&](const std::vector<CallDesc>& descs) -> Status {
      if (!root) return Status::Ok();
      std::vector<const void*> srcs(size_t(c.nranks));
      for (int p = 0; p < c.nranks; ++p) {
        if (p == c.rank) {
          srcs[size_t(p)] = my_in;
          continue;
        }
        Result<const char*> src = c.peer_block(p, descs[size_t(p)], 0, bytes);
        if (!src.ok()) return src.status();
        srcs[size_t(p)] = *src;
      }
      reduce::reduce_n(call.recv + r.begin * es, srcs.data(), c.nranks, r.size(), call.dtype,
                       call.op, c.nranks);
      return Status::Ok();
    });
  });
}

}  // namespace stratacl
