// ReduceScatter: rank r reduces block r of every rank's input, read in place, in rank order;
// small ones go eager. Several runs (Call::runs) take one step: rank r reduces block r of each.
#include <vector>

#include "coll/algorithms.h"
#include "coll/eager.h"
#include "coll/input_tiles.h"
#include "coll/round.h"
#include "core/dtype.h"
#include "reduce/reduce.h"

namespace stratacl {

Status reduce_scatter(CollContext& c, const Call& call) {
  const size_t es = dtype_size(call.dtype), runs = size_t(call.runs);
  const size_t block_stride = call.count * es;
  const int nblocks = c.nranks * call.runs;
  // Block `ours` of run h: the one this rank reduces there.
  auto ours = [&](size_t h) { return h * size_t(c.nranks) + size_t(c.rank); };
  if (eager_fits(c, block_stride * size_t(nblocks))) {
    const EagerInput in{call.send.ptr, block_stride, nblocks, block_stride};
    return run_eager_step(c, call, in, [&](const auto& from) {
      std::vector<const void*>& srcs = c.scratch[0].srcs;
      srcs.resize(size_t(c.nranks));
      for (size_t h = 0; h < runs; ++h) {
        for (int p = 0; p < c.nranks; ++p)
          srcs[size_t(p)] = payload_at(from[size_t(p)], ours(h) * block_stride);
        reduce::reduce_n(call.recv + h * block_stride, srcs.data(), c.nranks, call.count,
                         call.dtype, call.op, c.nranks);
      }
    });
  }
  return for_each_round(c, call, nblocks, [&](Range r) -> Status {
    const size_t bytes = r.size() * es;
    CallDesc d = make_desc(c, call);
    publish_input(c, call.send.at(r.begin * es), block_stride, nblocks, bytes, 0, &d);
    return run_step(c, d, [&](const std::vector<CallDesc>& descs) -> Status {
      for (size_t h = 0; h < runs; ++h) {
        // Our own block of our own input: read in place, even if it was staged for the peers.
        const char* mine = call.send.ptr + ours(h) * block_stride + r.begin * es;
        SCL_TRY(reduce_inputs(c, descs, ours(h), mine, r.size(), call,
                              call.recv + h * block_stride + r.begin * es));
      }
      return Status::Ok();
    });
  });
}

}  // namespace stratacl
