// Broadcast: every rank reads the root's buffer directly (single copy); small ones go eager.
#include "coll/algorithms.h"
#include "coll/eager.h"
#include "coll/round.h"
#include "core/dtype.h"
#include "exec/copy.h"

namespace stratacl {

Status broadcast(CollContext& c, const Call& call) {
  const size_t es = dtype_size(call.dtype);
  const bool root = c.rank == call.root;
  if (const size_t bytes = call.count * es; eager_fits(c, bytes)) {
    const EagerInput in = root ? EagerInput{call.send.ptr, 0, 1, bytes} : EagerInput{};
    return run_eager_step(c, call, in, [&](const auto& from) {
      copy_bytes(call.recv, from[size_t(call.root)], bytes);
    });
  }
  const bool stream = streaming_pays(call.count * es);
  return for_each_round(c, call, 1, [&](Range r) -> Status {
    const size_t bytes = r.size() * es;
    CallDesc d = make_desc(c, call);
    if (root) publish_input(c, call.send.at(r.begin * es), 0, 1, bytes, 0, &d);
    return run_step(c, d, [&](const std::vector<CallDesc>& descs) -> Status {
      char* out = call.recv + r.begin * es;
      if (root) {
        c.copy(out, call.send.ptr + r.begin * es, bytes, stream);
        return Status::Ok();
      }
      return c.read_block(call.root, descs[size_t(call.root)].send, 0, 0, bytes, out, stream);
    });
  });
}

}  // namespace stratacl
