// Hierarchical allreduce (hierarchical.h). The buffer splits into L equal shards plus a tail of
// fewer than L elements: a local reduce-scatter leaves each rank its shard of the host's sum, its
// rail allreduces the shard (net/rail.h picks the direct round, recursive doubling, Bruck's rounds,
// the halves, scatter-gather or the ring by the shard's size and the host count), and a local
// allgather fills in the rest. The tail is reduced by every rank (local allreduce, then every
// rail), which costs at most L - 1 elements twice and keeps the shards equal for the local steps.
// Small buffers skip the split: one local allreduce, after which every rank of the host holds
// the same sum, until the copies a host's rails would send alike cost more than a second local
// step and a rail operation for the tail (kSplitMinRedundantBytes). With several ranks a host,
// that sum goes once between each pair of hosts, not once per rail (allreduce_spread()).
#include <vector>

#include "coll/algorithms.h"
#include "core/dtype.h"
#include "hier/hierarchical.h"
#include "hier/spread.h"
#include "reduce/reduce.h"

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
// splits (docs/SCALE-MODEL.md). From 3 hosts the unsplit buffer is spread instead
// (kSpreadMinHosts): no copies go alike, but its local allgather brings every rank the other
// hosts' H - 1 sums, bytes that grow with the size too; the threshold is kept as measured
// before the spread, not fitted to it.
constexpr size_t kSplitMinRedundantBytes = 64 << 10;

// A small allreduce with several ranks a host, after the local allreduce has left the host's
// sum in every rank's output: the sum goes once between each pair of hosts (hier/spread.h), and
// every rank reduces the H sums in host order, as the rail's direct round does: every rank gets
// the same bits. At 3x2 here calls up to 64 B took 0.73-0.80x the time of every rail sending the
// sum and at 4 KiB 0.70x (docs/PERFORMANCE.md, "Small allreduces spread over a host's ranks").
Status allreduce_spread(Context& c, const Call& call) {
  const int H = c.topo().hosts;
  const size_t bytes = call.count * dtype_size(call.dtype);
  Spread spread;
  SCL_TRY(spread.reserve(c, bytes, 0));
  SCL_TRY(c.local_step(
      local_call(call, Coll::kAllReduce, call.send, call.recv, call.recv_kind, call.count)));
  SCL_TRY(spread.exchange(c, call, call.recv, 0, 0));
  std::vector<const void*> srcs(size_t(H), call.recv);
  for (int h = 0; h < H; ++h) {
    if (h != c.topo().host) srcs[size_t(h)] = spread.from(h);
  }
  reduce::reduce_n(call.recv, srcs.data(), H, call.count, call.dtype, summing(call.op), 1);
  finish_average(call, call.recv, call.count, c.world_ranks);
  return c.outcome();
}

}  // namespace

Status allreduce(Context& c, const Call& call) {
  c.rail.go_on_through_failures();  // its steps go through Context::local_step, rail_step
  const net::Topology& t = c.topo();
  const size_t es = dtype_size(call.dtype), bytes = call.count * es;
  size_t shard = call.count / size_t(t.per_host), main = shard * size_t(t.per_host);
  size_t tail = call.count - main;
  const size_t alike = size_t(t.per_host - 1) * bytes * size_t(c.rail.small_allreduce_copies());
  if (bytes <= net::Rail::kDirectMaxBytes && alike < kSplitMinRedundantBytes) {
    if (t.per_host > 1 && t.hosts >= kSpreadMinHosts) {  // count 0 too: its peers' shape
      return allreduce_spread(c, call);
    }
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
  // A call of no elements runs as a tail of none: its steps and messages still carry the call,
  // so a rank whose count differs fails it on every rank, as on one host.
  if (tail > 0 || call.count == 0) {
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
