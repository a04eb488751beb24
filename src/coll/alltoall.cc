// AlltoAll: rank r copies block r of each peer's input straight into block p of its output;
// small ones go eager.
#include "coll/algorithms.h"
#include "coll/eager.h"
#include "coll/round.h"
#include "core/dtype.h"
#include "exec/copy.h"

namespace stratacl {

Status alltoall(CollContext& c, const Call& call) {
  const size_t es = dtype_size(call.dtype);
  const size_t block_stride = call.count * es;
  if (eager_fits(c, block_stride * size_t(c.nranks))) {
    const EagerInput in{call.send.ptr, block_stride, c.nranks, block_stride};
    return run_eager_step(c, call, in, [&](const auto& from) {
      for (int p = 0; p < c.nranks; ++p) {
        copy_bytes(call.recv + size_t(p) * block_stride,
                   payload_at(from[size_t(p)], size_t(c.rank) * block_stride), block_stride);
      }
    });
  }
  const bool stream = streaming_pays(block_stride * size_t(c.nranks));
  return for_each_round(c, call, c.nranks, [&](Range r) -> Status {
    const size_t bytes = r.size() * es;
    CallDesc d = make_desc(c, call);
    publish_input(c, call.send.at(r.begin * es), block_stride, c.nranks, bytes, 0, &d);
    return run_step(c, d, [&](const std::vector<CallDesc>& descs) -> Status {
      for (int k = 0; k < c.nranks; ++k) {
        const int p = (c.rank + k) % c.nranks;
        char* out = call.recv + size_t(p) * block_stride + r.begin * es;
        if (p == c.rank) {
          c.copy(out, call.send.ptr + size_t(p) * block_stride + r.begin * es, bytes, stream);
          continue;
        }
        SCL_TRY(c.read_block(p, descs[size_t(p)].send, size_t(c.rank), 0, bytes, out, stream));
      }
      return Status::Ok();
    });
  });
}

}  // namespace stratacl
