// ReduceScatter: rank r reduces block r of every rank's input, read in place, in rank order;
// small ones go eager.
#include <vector>

#include "coll/algorithms.h"
#include "coll/eager.h"
#include "coll/input_tiles.h"
#include "coll/round.h"
#include "core/dtype.h"
#include "reduce/reduce.h"

namespace stratacl {

Status reduce_scatter(CollContext& c, const Call& call) {
  const size_t es = dtype_size(call.dtype);
  const size_t block_stride = call.count * es;
  if (eager_fits(c, block_stride * size_t(c.nranks))) {
    const EagerInput in{call.send.ptr, block_stride, c.nranks, block_stride};
    return run_eager_step(c, call, in, [&](const auto& from) {
      std::vector<const void*>& srcs = c.scratch[0].srcs;
      srcs.resize(size_t(c.nranks));
      for (int p = 0; p < c.nranks; ++p)
        srcs[size_t(p)] = payload_at(from[size_t(p)], size_t(c.rank) * block_stride);
      reduce::reduce_n(call.recv, srcs.data(), c.nranks, call.count, call.dtype, call.op, c.nranks);
    });
  }
  return for_each_round(c, call, c.nranks, [&](Range r) -> Status {
    const size_t bytes = r.size() * es;
    CallDesc d = make_desc(c, call);
    publish_input(c, call.send.at(r.begin * es), block_stride, c.nranks, bytes, 0, &d);
    return run_step(c, d, [&](const std::vector<CallDesc>& descs) -> Status {
      // Our own block of our own input: read in place, even if it was staged for the peers.
      const char* mine = call.send.ptr + size_t(c.rank) * block_stride + r.begin * es;
      return reduce_inputs(c, descs, size_t(c.rank), mine, r.size(), call,
                           call.recv + r.begin * es);
    });
  });
}

}  // namespace stratacl
