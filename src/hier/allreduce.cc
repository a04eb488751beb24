// Hierarchical allreduce (hierarchical.h). The buffer splits into L equal shards plus a tail of
// fewer than L elements: a local reduce-scatter leaves each rank its shard of the host's sum, its
// rail allreduces the shard (net/rail.h picks the direct round, recursive doubling, Bruck's rounds,
// the halves, scatter-gather or the ring by the shard's size and the host count), and a local
// allgather fills in the rest. The tail is reduced by every rank (local allreduce, then every
// rail), which costs at most L - 1 elements twice and keeps the shards equal for the local steps.
// Small buffers skip the split: one local allreduce, then every rail carries the whole buffer,
// which saves a local step and a second rail operation for the tail, until the copies a host's
// rails send alike cost more than those (kSplitMinRedundantBytes).
#include "coll/algorithms.h"
#include "core/dtype.h"
#include "hier/hierarchical.h"

namespace stratacl::hier {
namespace {

// A small buffer is split over the rails from here: the bytes a host's rails send alike in one
// call, (L - 1) x its size x the copies each rail sends. Splitting costs a second local step
// (about a microsecond on a host whose ranks each have a core) and, where L does not divide the
// count, a rail operation for the tail (a round trip, some 5 µs over RoCE): about what a
// 100 Gb/s link takes for 64 KiB. On this machine (docs/PERFORMANCE.md, "Small allreduces split
// over the rails") the 64 KiB call took 0.79-0.81x the time at 2x2 and 0.71-0.85x at 3x2 and
// 4x2, while a lower threshold lost at 2x4 (8-16 KiB buffers, 1.07-1.28x), where the second
// local step waits for 4 ranks per core. At 384 ranks (48 hosts of 8) every buffer from 200 B
// splits (docs/SCALE-MODEL.md).
constexpr size_t kSplitMinRedundantBytes = 64 << 10;

}  // namespace

Status allreduce(Context& c, const Call& call) {
  c.rail.go_on_through_failures();  // its steps go through Context::local_step, rail_step
  const net::Topology& t = c.topo();
  const size_t es = dtype_size(call.dtype), bytes = call.count * es;
  size_t shard = call.count / size_t(t.per_host), main = shard * size_t(t.per_host);
  size_t tail = call.count - main;
  const size_t alike = size_t(t.per_host - 1) * bytes * size_t(c.rail.small_allreduce_copies());
  if (bytes <= net::Rail::kDirectMaxBytes && alike < kSplitMinRedundantBytes) {
    shard = 0;
    main = 0;
    tail = call.count;
  }
  // Alone on its host, a rank skips the local step before its rail: the rail reads the input
  // where it is and writes the output, where that step would copy the input into the output
  // first (the local allgather after it is no copy then).
  const bool alone = t.per_host == 1;
  if (shard > 0) {
    // The shard's local steps carry the tail as their root (which they ignore, but the step
    // signature holds): a rank whose count is one element longer has the same shards, and would
    // otherwise pass them with the others', then wait alone in its tail's local step.
    const int signed_tail = int(tail);
    char* mine = call.recv + size_t(t.local) * shard * es;
    const char* in = alone ? call.send.ptr : mine;
    if (!alone) {
      SCL_TRY(c.local_step(local_call(call, Coll::kReduceScatter, call.send, mine, call.recv_kind,
                                      shard, signed_tail)));
    }
    SCL_TRY(c.rail_step(
        c.rail.allreduce(in, mine, shard, call.dtype, summing(call.op), c.local.deadline())));
    if (c.outcome().ok()) finish_average(call, mine, shard, c.world_ranks);
    SCL_TRY(c.local_step(local_call(call, Coll::kAllGather, LocalBuffer{mine, call.recv_kind},
                                    call.recv, call.recv_kind, shard, signed_tail)));
  }
  if (tail > 0) {
    char* out = call.recv + main * es;
    const char* in = alone ? call.send.ptr + main * es : out;
    if (!alone) {
      SCL_TRY(c.local_step(
          local_call(call, Coll::kAllReduce, call.send.at(main * es), out, call.recv_kind, tail)));
    }
    SCL_TRY(c.rail_step(
        c.rail.allreduce(in, out, tail, call.dtype, summing(call.op), c.local.deadline())));
    if (c.outcome().ok()) finish_average(call, out, tail, c.world_ranks);
  }
  return c.outcome();
}

}  // namespace stratacl::hier
