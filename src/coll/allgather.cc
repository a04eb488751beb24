// AllGather: every rank copies each peer's input block straight into its own output; small
// ones go eager. Several runs (Call::runs) take one step: each rank publishes its block of every
// run, and its peers read them all.
#include "coll/algorithms.h"
#include "coll/eager.h"
#include "coll/round.h"
#include "core/dtype.h"
#include "exec/copy.h"

namespace stratacl {

Status allgather(CollContext& c, const Call& call) {
  const size_t es = dtype_size(call.dtype), runs = size_t(call.runs);
  const size_t run_stride = size_t(c.nranks) * call.count * es;  // between a rank's blocks
  auto block_out = [&](size_t h, int p) {
    return call.recv + h * run_stride + size_t(p) * call.count * es;
  };
  if (const size_t bytes = call.count * es; eager_fits(c, runs * bytes)) {
    const EagerInput in{call.send.ptr, run_stride, call.runs, bytes};
    return run_eager_step(c, call, in, [&](const auto& from) {
      for (int p = 0; p < c.nranks; ++p)
        for (size_t h = 0; h < runs; ++h)
          copy_bytes(block_out(h, p), payload_at(from[size_t(p)], h * bytes), bytes);
    });
  }
  const bool stream = streaming_pays(call.count * es * size_t(c.nranks) * runs);
  return for_each_round(c, call, call.runs, [&](Range r) -> Status {
    const size_t bytes = r.size() * es, at = r.begin * es;
    const LocalBuffer my_in = call.send.at(at);
    CallDesc d = make_desc(c, call);
    publish_input(c, my_in, run_stride, call.runs, bytes, 0, &d);
    return run_step(c, d, [&](const std::vector<CallDesc>& descs) -> Status {
      for (int k = 0; k < c.nranks; ++k) {
        const int p = (c.rank + k) % c.nranks;
        for (size_t h = 0; h < runs; ++h) {
          char* out = block_out(h, p) + at;
          if (p == c.rank) {
            c.copy(out, my_in.ptr + h * run_stride, bytes, stream);  // a no-op in place
            continue;
          }
          SCL_TRY(c.read_block(p, descs[size_t(p)].send, h, 0, bytes, out, stream));
        }
      }
      return Status::Ok();
    });
  });
}

}  // namespace stratacl
