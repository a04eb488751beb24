// AllReduce: eager for small payloads; otherwise, round by round, one-shot (every rank reduces
// every input) or two-shot (allreduce_twoshot.cc), chosen inside the step from every rank's
// descriptor, so the choice may depend on whether any rank runs in place (coll/selection.h).
#include <vector>

#include "coll/algorithms.h"
#include "coll/allreduce_twoshot.h"
#include "coll/eager.h"
#include "coll/input_tiles.h"
#include "coll/round.h"
#include "coll/selection.h"
#include "core/dtype.h"
#include "exec/copy.h"
#include "reduce/reduce.h"

namespace stratacl {
namespace {

bool all_out_of_place(const std::vector<CallDesc>& descs) {
  for (const CallDesc& d : descs)
    if (d.flags & kDescInPlace) return false;
  return true;
}

}  // namespace

Status allreduce(CollContext& c, const Call& call) {
  const size_t es = dtype_size(call.dtype);
  const size_t call_bytes = call.count * es;
  if (eager_fits(c, call_bytes)) {
    return run_eager_step(c, call, EagerInput{call.send.ptr, 0, 1, call_bytes},
                          [&](const auto& in) {
                            reduce::reduce_n(call.recv, in.data(), c.nranks, call.count, call.dtype,
                                             call.op, c.nranks);
                          });
  }
  const bool in_place = call.send.ptr == call.recv;
  return for_each_round(c, call, 2, [&](Range r) -> Status {
    AllreduceRound a;
    a.count = r.size(), a.bytes = a.count * es;
    a.in = call.send.at(r.begin * es);
    a.out = call.recv + r.begin * es;
    a.out_in_heap = call.recv_kind == MemKind::kHeap;
    a.shard_home = a.out_in_heap ? a.out : c.stager.area() + c.round_bytes / 2;
    CallDesc d = make_desc(c, call);
    publish_input(c, a.in, 0, 1, a.bytes, 0, &d);
    d.out = RemoteRef{c.stager.heap().offset_of(a.shard_home), 0, RefKind::kMapped};
    d.flags = in_place ? kDescInPlace : 0;
    // One-shot in place: peers still read our input while we would overwrite it, so we reduce
    // into scratch and copy out after the step's done-count.
    std::vector<char>& scratch = c.scratch[0].bytes;
    bool copy_out = false;
    SCL_TRY(run_step(c, d, [&](const std::vector<CallDesc>& descs) -> Status {
      if (!use_oneshot(c.nranks, call_bytes, all_out_of_place(descs), c.oneshot_forced_max))
        return allreduce_twoshot(c, call, descs, a);
      copy_out = in_place && c.nranks > 1;  // alone, nobody else reads our input
      if (copy_out && scratch.size() < a.bytes) scratch.resize(a.bytes);
      return reduce_inputs(c, descs, 0, a.in.ptr, a.count, call, copy_out ? scratch.data() : a.out);
    }));
    if (copy_out) c.copy(a.out, scratch.data(), a.bytes);
    return Status::Ok();
  });
}

}  // namespace stratacl
