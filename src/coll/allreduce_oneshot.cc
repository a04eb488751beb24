// One-shot allreduce: every rank reduces all inputs, read straight from the peers' buffers, in
// rank order 0..n-1 so every rank computes bit-identical results. One step, no phase barrier.
#include <vector>

#include "coll/algorithms.h"
#include "coll/input_tiles.h"
#include "coll/round.h"
#include "exec/copy.h"

namespace stratacl {

Status allreduce_oneshot(CollContext& c, const Call& call) {
  const size_t es = elem_size(call.dtype);
  return for_each_round(c, call, 2, [&](Range r) -> Status {
    const size_t bytes = r.size() * es;
    const char* my_in = call.send + r.begin * es;
    char* my_out = call.recv + r.begin * es;
    CallDesc d = make_desc(c, call);
    publish_input(c, my_in, 0, 1, bytes, 0, &d);
    // In place, peers still read our input while we would overwrite it: reduce into private
    // scratch and copy out after the step's done-count.
    const bool in_place = my_in == my_out;
    thread_local std::vector<char> scratch;
    if (in_place && scratch.size() < bytes) scratch.resize(bytes);
    char* dst = in_place ? scratch.data() : my_out;
    SCL_TRY(run_step(c, d, [&](const std::vector<CallDesc>& descs) -> Status {
      return reduce_inputs(c, descs, 0, my_in, r.size(), call, dst);
    }));
    if (in_place) copy_bytes(my_out, dst, bytes);
    return Status::Ok();
  });
}

}  // namespace stratacl
