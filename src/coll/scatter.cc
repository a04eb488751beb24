// Scatter: rank r copies block r of the root's input straight into its output; small ones go
// eager.
#include "coll/algorithms.h"
#include "coll/eager.h"
#include "coll/round.h"
#include "core/dtype.h"
#include "exec/copy.h"

namespace stratacl {

Status scatter(CollContext& c, const Call& call) {
  const size_t es = dtype_size(call.dtype);
  const size_t block_stride = call.count * es;
  const bool root = c.rank == call.root;
  if (eager_fits(c, block_stride * size_t(c.nranks))) {
    const EagerInput in =
        root ? EagerInput{call.send.ptr, block_stride, c.nranks, block_stride} : EagerInput{};
    return run_eager_step(c, call, in, [&](const auto& from) {
      copy_bytes(call.recv, payload_at(from[size_t(call.root)], size_t(c.rank) * block_stride),
                 block_stride);
    });
  }
  return for_each_round(c, call, c.nranks, [&](Range r) -> Status {
    const size_t bytes = r.size() * es;
    CallDesc d = make_desc(c, call);
    if (root) publish_input(c, call.send.at(r.begin * es), block_stride, c.nranks, bytes, 0, &d);
    return run_step(c, d, [&](const std::vector<CallDesc>& descs) -> Status {
      char* out = call.recv + r.begin * es;
      if (root) {
        c.copy(out, call.send.ptr + size_t(c.rank) * block_stride + r.begin * es, bytes);
        return Status::Ok();
      }
      return c.read_block(call.root, descs[size_t(call.root)].send, size_t(c.rank), 0, bytes, out);
    });
  });
}

}  // namespace stratacl
