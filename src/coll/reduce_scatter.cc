// ReduceScatter: rank r reduces block r of every rank's input, read in place, in rank order.
#include <vector>

#include "coll/algorithms.h"
#include "coll/round.h"
#include "reduce/reduce.h"

namespace stratacl {

Status reduce_scatter(CollContext& c, const Call& call) {
  const size_t es = elem_size(call.dtype);
  const size_t block_stride = call.count * es;
  return for_each_round(c, call, c.nranks, [&](Range r) -> Status {
    const size_t bytes = r.size() * es;
    CallDesc d = make_desc(c, call);
    publish_input(c, call.send + r.begin * es, block_stride, c.nranks, bytes, 0, &d);
    return run_step(c, d, [&](const std::vector<CallDesc>& descs) -> Status {
      std::vector<const void*> srcs(size_t(c.nranks));
      for (int p = 0; p < c.nranks; ++p) {
        if (p == c.rank) {
          srcs[size_t(p)] = call.send + size_t(c.rank) * block_stride + r.begin * es;
          continue;
        }
        const CallDesc& pd = descs[size_t(p)];
        Result<const char*> src =
            c.peer_block(p, pd, size_t(c.rank), bytes);
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
