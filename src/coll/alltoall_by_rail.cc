// The intra-host half of an alltoall across hosts that sends one message per rail and host
// (hier/alltoall.cc): each rank's input holds H * L blocks in world order (block h * L + l for
// local rank l of host h), and local rank l collects from every local rank p the block for
// local index l of every host h, into dst[h] + p * block. dst[our host] is the call's output
// for our host's ranks; each other is the message to our rail peer on that host, who needs
// exactly those blocks in that order. One step for all hosts; small inputs go eager.
#include "coll/algorithms.h"
#include "coll/eager.h"
#include "coll/round.h"
#include "core/dtype.h"
#include "exec/copy.h"

namespace stratacl {

Status alltoall_by_rail(CollContext& c, const Call& call, std::span<char* const> dst) {
  const size_t es = dtype_size(call.dtype);
  const size_t block = call.count * es;
  const int hosts = int(dst.size()), n = c.nranks;
  const int nblocks = hosts * n;
  auto index = [&](int h) { return size_t(h) * size_t(n) + size_t(c.rank); };
  if (eager_fits(c, block * size_t(nblocks))) {
    const EagerInput in{call.send.ptr, block, nblocks, block};
    return run_eager_step(c, call, in, [&](const auto& from) {
      for (int h = 0; h < hosts; ++h) {
        for (int p = 0; p < n; ++p) {
          copy_bytes(dst[size_t(h)] + size_t(p) * block,
                     payload_at(from[size_t(p)], index(h) * block), block);
        }
      }
    });
  }
  if (hosts > 1 && size_t(nblocks) * es > c.round_bytes) {
    // Even one element of every block would overflow the staging area that foreign inputs
    // go through: one step per host instead, of L blocks each (every rank of the host decides
    // alike, and the result, so the messages, are the same).
    for (int h = 0; h < hosts; ++h) {
      Call part = call;
      part.send = call.send.at(size_t(h) * size_t(n) * block);
      SCL_TRY(alltoall_by_rail(c, part, dst.subspan(size_t(h), 1)));
    }
    return Status::Ok();
  }
  const bool stream = streaming_pays(block * size_t(nblocks));
  return for_each_round(c, call, nblocks, [&](Range r) -> Status {
    const size_t bytes = r.size() * es;
    CallDesc d = make_desc(c, call);
    publish_input(c, call.send.at(r.begin * es), block, nblocks, bytes, 0, &d);
    return run_step(c, d, [&](const std::vector<CallDesc>& descs) -> Status {
      for (int h = 0; h < hosts; ++h) {
        for (int k = 0; k < n; ++k) {
          const int p = (c.rank + k) % n;
          char* out = dst[size_t(h)] + size_t(p) * block + r.begin * es;
          if (p == c.rank) {
            c.copy(out, call.send.ptr + index(h) * block + r.begin * es, bytes, stream);
            continue;
          }
          SCL_TRY(c.read_block(p, descs[size_t(p)].send, index(h), 0, bytes, out, stream));
        }
      }
      return Status::Ok();
    });
  });
}

}  // namespace stratacl
