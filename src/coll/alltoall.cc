// AlltoAll: rank r copies block r of each peer's input straight into block p of its output.
#include "coll/algorithms.h"
#include "coll/round.h"
#include "exec/copy.h"

namespace stratacl {

Status alltoall(CollContext& c, const Call& call) {
  const size_t es = elem_size(call.dtype);
  const size_t block_stride = call.count * es;
  return for_each_round(c, call, c.nranks, [&](Range r) -> Status {
    const size_t bytes = r.size() * es;
    CallDesc d = make_desc(c, call);
    publish_input(c, call.send + r.begin * es, block_stride, c.nranks, bytes, 0, &d);
    return run_step(c, d, [&](const std::vector<CallDesc>& descs) -> Status {
      for (int k = 0; k < c.nranks; ++k) {
        const int p = (c.rank + k) % c.nranks;
        char* out = call.recv + size_t(p) * block_stride + r.begin * es;
        if (p == c.rank) {
          copy_bytes(out, call.send + size_t(p) * block_stride + r.begin * es, bytes);
          continue;
        }
        SCL_TRY(c.read_block(p, descs[size_t(p)], size_t(c.rank), 0, bytes, out));
      }
      return Status::Ok();
    });
  });
}

}  // namespace stratacl
