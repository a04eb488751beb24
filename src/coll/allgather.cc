// AllGather: every rank copies each peer's input block straight into its own output; small
// ones go eager.
#include "coll/algorithms.h"
#include "coll/eager.h"
#include "coll/round.h"
#include "core/dtype.h"
#include "exec/copy.h"

namespace stratacl {

Status allgather(CollContext& c, const Call& call) {
  const size_t es = dtype_size(call.dtype);
  if (const size_t bytes = call.count * es; eager_fits(c, bytes)) {
    return run_eager_step(c, call, EagerInput{call.send.ptr, 0, 1, bytes}, [&](const auto& from) {
      for (int p = 0; p < c.nranks; ++p)
        copy_bytes(call.recv + size_t(p) * bytes, from[size_t(p)], bytes);
    });
  }
  const bool stream = streaming_pays(call.count * es * size_t(c.nranks));
  return for_each_round(c, call, 1, [&](Range r) -> Status {
    const size_t bytes = r.size() * es;
    const LocalBuffer my_in = call.send.at(r.begin * es);
    CallDesc d = make_desc(c, call);
    publish_input(c, my_in, 0, 1, bytes, 0, &d);
    return run_step(c, d, [&](const std::vector<CallDesc>& descs) -> Status {
      for (int k = 0; k < c.nranks; ++k) {
        const int p = (c.rank + k) % c.nranks;
        char* out = call.recv + (size_t(p) * call.count + r.begin) * es;
        if (p == c.rank) {
          c.copy(out, my_in.ptr, bytes, stream);  // a no-op in place
          continue;
        }
        SCL_TRY(c.read_block(p, descs[size_t(p)].send, 0, 0, bytes, out, stream));
      }
      return Status::Ok();
    });
  });
}

}  // namespace stratacl
