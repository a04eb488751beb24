// Hierarchical reduce-scatter (hierarchical.h): one local reduce-scatter of H runs, one per
// host's range of the input (coll/call.h, Call::runs), leaves each rank the host's partial for
// the block of its local index on every host, in one wait for the host's ranks; the rail
// exchanges the partials and reduces each rank's own block's (net::Rail::reduce_scatter). Small
// ones with several ranks a host go spread over the host's ranks instead (hier/spread.h).
#include <algorithm>
#include <vector>

#include "coll/algorithms.h"
#include "core/dtype.h"
#include "hier/hierarchical.h"
#include "hier/spread.h"
#include "reduce/reduce.h"

namespace stratacl::hier {
namespace {

// The spread's local steps carry this as their root (which an allreduce and an allgather ignore,
// but the step signature holds), so that they never pair with a spread allreduce's (root 0).
constexpr int kSpreadReduceScatterRoot = 1;

// Whether a reduce-scatter goes spread (alike on every rank): with several ranks a host, from
// kSpreadMinHosts hosts, where the rail would take its direct round (Bruck's rounds already send
// one message each way a round), while the whole input is at most the rail's small limit; the
// local allreduce reduces all of it on every rank.
bool spreads(const Context& c, const Call& call) {
  const net::Topology& t = c.topo();
  const size_t input = call.count * dtype_size(call.dtype) * size_t(c.world_ranks);
  return t.per_host > 1 && t.hosts >= kSpreadMinHosts && call.count > 0 &&
         input <= net::Rail::kDirectMaxBytes &&
         !c.rail.reduce_scatter_takes_rounds(call.count, call.dtype);
}

// One local allreduce leaves every rank of the host its partials for every host; each host's
// goes there once (hier/spread.h), and every rank reduces its block of the H partials for its
// host in host order, as the rail's direct round does after the local reduce-scatter. That is
// one more local step for half the messages a rank sends at 3x2.
Status reduce_scatter_spread(Context& c, const Call& call) {
  const net::Topology& t = c.topo();
  const size_t bytes = call.count * dtype_size(call.dtype);
  const size_t range = bytes * size_t(t.per_host);  // a host's ranks' blocks
  Spread spread;
  SCL_TRY(spread.reserve(c, range, range * size_t(t.hosts)));
  char* partials = spread.lead();
  SCL_TRY(c.local_step(local_call(call, Coll::kAllReduce, call.send, partials, MemKind::kHeap,
                                  call.count * size_t(c.world_ranks), kSpreadReduceScatterRoot)));
  SCL_TRY(spread.exchange(c, call, partials, range, kSpreadReduceScatterRoot));
  const size_t mine = size_t(t.local) * bytes;
  std::vector<const void*> srcs(size_t(t.hosts));
  for (int h = 0; h < t.hosts; ++h) {
    srcs[size_t(h)] = h == t.host ? partials + size_t(h) * range + mine : spread.from(h) + mine;
  }
  reduce::reduce_n(call.recv, srcs.data(), t.hosts, call.count, call.dtype, summing(call.op), 1);
  finish_average(call, call.recv, call.count, c.world_ranks);
  return c.outcome();
}

}  // namespace

Status reduce_scatter(Context& c, const Call& call) {
  c.rail.go_on_through_failures();  // its steps go through Context::local_step, rail_step
  if (spreads(c, call)) return reduce_scatter_spread(c, call);
  const net::Topology& t = c.topo();
  const size_t bytes = call.count * dtype_size(call.dtype);
  std::vector<const char*> parts;
  if (t.per_host == 1) {
    // Alone on its host, a rank's partial for host h is its input's block h: the rail sends and
    // reduces it where it is, where a local step would copy the whole input first.
    for (int h = 0; h < t.hosts; ++h) parts.push_back(call.send.ptr + size_t(h) * bytes);
  } else {
    char* scratch = c.scratch.get(bytes * size_t(t.hosts));
    for (int h = 0; h < t.hosts; ++h) parts.push_back(scratch + size_t(h) * bytes);
    const int per_step =
        runs_per_step(c.local.round_bytes, t.hosts, size_t(t.per_host), dtype_size(call.dtype));
    for (int h = 0; h < t.hosts; h += per_step) {
      Call local =
          local_call(call, Coll::kReduceScatter, call.send.at(size_t(t.world_of(h, 0)) * bytes),
                     scratch + size_t(h) * bytes, MemKind::kForeign, call.count);
      local.runs = std::min(per_step, t.hosts - h);
      SCL_TRY(c.local_step(local));
    }
  }
  SCL_TRY(c.rail_step(c.rail.reduce_scatter(parts, call.recv, call.count, call.dtype,
                                            summing(call.op), c.local.deadline())));
  if (c.outcome().ok()) finish_average(call, call.recv, call.count, c.world_ranks);
  return c.outcome();
}

}  // namespace stratacl::hier
