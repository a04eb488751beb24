// Two-shot allreduce: reduce-scatter by direct reads (rank r reduces shard r of every input, in
// rank order), a phase barrier, then allgather by direct reads of the peers' reduced shards.
// Shards are balanced by bytes (exec/partition). Peers read our shard from our output buffer
// when it is heap memory, else from the staging area's second half.
#include <vector>

#include "coll/algorithms.h"
#include "coll/round.h"
#include "exec/copy.h"
#include "reduce/reduce.h"

namespace stratacl {

Status allreduce_twoshot(CollContext& c, const Call& call) {
  const size_t es = elem_size(call.dtype);
  return for_each_round(c, call, 2, [&](Range r) -> Status {
    const size_t m = r.size(), bytes = m * es;
    const char* my_in = call.send + r.begin * es;
    char* my_out = call.recv + r.begin * es;
    CallDesc d = make_desc(c, call);
    publish_input(c, my_in, 0, 1, bytes, 0, &d);
    const bool out_in_heap = in_heap(c, my_out, bytes);
    char* shard_home = out_in_heap ? my_out : c.staging + c.round_bytes / 2;
    d.out_ref = c.ref_of(shard_home);

    return run_step(c, d, [&](const std::vector<CallDesc>& descs) -> Status {
      // Phase 1: reduce our shard. Our own input may be read in place (dst may alias it).
      const Range mine = partition(m, es, c.nranks, c.rank);
      std::vector<const void*> srcs(size_t(c.nranks));
      for (int p = 0; p < c.nranks; ++p) {
        if (p == c.rank) {
          srcs[size_t(p)] = my_in + mine.begin * es;
          continue;
        }
        Result<const char*> src = c.peer_block(p, descs[size_t(p)], 0, bytes);
        if (!src.ok()) return src.status();
        srcs[size_t(p)] = *src + mine.begin * es;
      }
      reduce::reduce_n(shard_home + mine.begin * es, srcs.data(), c.nranks, mine.size(),
                       call.dtype, call.op, c.nranks);
      if (!out_in_heap) copy_bytes(my_out + mine.begin * es, shard_home + mine.begin * es, mine.size() * es);
      // Every shard is reduced before anyone copies (and, in place, before anyone overwrites
      // an input region a peer still reads).
      SCL_TRY(step_phase(c));
      // Phase 2: gather the other shards, starting after our rank to spread the readers.
      for (int k = 1; k < c.nranks; ++k) {
        const int p = (c.rank + k) % c.nranks;
        const Range theirs = partition(m, es, c.nranks, p);
        Result<const char*> src = c.peer_ptr(p, descs[size_t(p)].out_ref, bytes);
        if (!src.ok()) return src.status();
        copy_bytes(my_out + theirs.begin * es, *src + theirs.begin * es, theirs.size() * es);
      }
      return Status::Ok();
    });
  });
}

}  // namespace stratacl
