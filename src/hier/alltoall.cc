// Alltoall and alltoallv across hosts. Direct: the blocks between ranks of one host go through
// the intra-host zero-copy alltoallv; every other block travels straight to its rank over the
// network, all in one batch: (H - 1) * L messages per rank. By rail, for small blocks: one
// local step hands each rank, for every other host, the blocks its host's ranks have for its
// rail peer there, and one message per host carries them (H - 1 per rank), straight into the
// peer's output. Small calls pay per message, not per byte (docs/PERFORMANCE.md, "Alltoall by
// rail"); from 4 hosts the smallest go in rounds of Bruck's algorithm along the rail, ceil(log2 H)
// messages per rank (net::Rail::alltoall; "Small calls in rounds at any host count").
#include <vector>

#include "coll/algorithms.h"
#include "core/dtype.h"
#include "hier/hierarchical.h"

namespace stratacl::hier {
namespace {

// The direct path. `even`: every block has the call's count on every rank (alltoall), so the
// network's transfers may go one-sided (net::Rail::exchange_even); alltoallv's sizes are each
// rank's own, and only the receiver can check them.
Status direct(Context& c, const Call& call, bool even) {
  c.rail.go_on_through_failures();  // its steps go through Context::local_step, rail_step
  const net::Topology& t = c.topo();
  const size_t es = dtype_size(call.dtype);
  const int first = t.world_of(t.host, 0);
  std::vector<size_t> arrays[4];
  for (int l = 0; l < t.per_host; ++l) {
    arrays[0].push_back(call.sendcounts[first + l]);
    arrays[1].push_back(call.sdispls[first + l]);
    arrays[2].push_back(call.recvcounts[first + l]);
    arrays[3].push_back(call.rdispls[first + l]);
  }
  Call local = local_call(call, Coll::kAlltoAllv, call.send, call.recv, call.recv_kind, 0);
  local.sendcounts = arrays[0].data(), local.sdispls = arrays[1].data();
  local.recvcounts = arrays[2].data(), local.rdispls = arrays[3].data();
  SCL_TRY(c.local_step(local));
  std::vector<net::Transfer> batch;
  for (int w = 0; w < c.world_ranks; ++w) {
    if (t.host_of(w) == t.host) continue;
    batch.push_back(
        net::Rail::send_to(w, call.send.ptr + call.sdispls[w] * es, call.sendcounts[w] * es));
    batch.push_back(
        net::Rail::recv_from(w, call.recv + call.rdispls[w] * es, call.recvcounts[w] * es));
  }
  const Deadline& d = c.local.deadline();
  const int senders = c.world_ranks - t.per_host;  // every rank of the other hosts
  SCL_TRY(c.rail_step(even ? c.rail.exchange_even(batch, call.count * es, senders, d)
                           : c.rail.exchange(batch, d)));
  return c.outcome();
}

// Largest message by rail (L blocks): a pack of 256 KiB goes by rxm's rendezvous over tcp, and
// from there the extra copy costs more than the messages saved (measured in the docs section
// named above).
constexpr size_t kByRailMaxBytes = 128 << 10;

// `in_rounds`: Rail::alltoall_in_rounds() of the pack, decided once by the caller.
Status alltoall_in_packs(Context& c, const Call& call, bool in_rounds) {
  const net::Topology& t = c.topo();
  const size_t run = size_t(t.per_host) * call.count * dtype_size(call.dtype);  // one host's
  SCL_ASSIGN_OR_RETURN(char* packs, c.heap_scratch.get(run * size_t(t.hosts)));
  std::vector<char*> dst;
  for (int h = 0; h < t.hosts; ++h) {
    dst.push_back(h == t.host ? call.recv + size_t(h) * run : packs + size_t(h) * run);
  }
  const Call local =
      local_call(call, Coll::kAlltoAll, call.send, call.recv, call.recv_kind, call.count);
  c.rail.go_on_through_failures();  // its steps go through Context::keep, rail_step
  SCL_TRY(c.keep(c.on_host(stratacl::alltoall_by_rail(c.local, local, dst)), true));
  if (in_rounds) {
    std::vector<const char*> from(dst.begin(), dst.end());
    std::vector<char*> to;
    for (int h = 0; h < t.hosts; ++h) to.push_back(call.recv + size_t(h) * run);
    SCL_TRY(c.rail_step(c.rail.alltoall(from, to, run, c.local.deadline())));
    return c.outcome();
  }
  std::vector<net::Transfer> batch;
  for (int h = 0; h < t.hosts; ++h) {
    if (h == t.host) continue;
    const int peer = t.world_of(h, t.local);
    batch.push_back(net::Rail::send_to(peer, dst[size_t(h)], run));
    batch.push_back(net::Rail::recv_from(peer, call.recv + size_t(h) * run, run));
  }
  SCL_TRY(c.rail_step(c.rail.exchange(batch, c.local.deadline())));
  return c.outcome();
}

}  // namespace

Status alltoall(Context& c, const Call& call) {
  const net::Topology& t = c.topo();
  const size_t run = size_t(t.per_host) * call.count * dtype_size(call.dtype);
  const bool in_rounds = c.rail.alltoall_in_rounds(run);
  if ((t.per_host > 1 && run <= kByRailMaxBytes) || in_rounds) {
    return alltoall_in_packs(c, call, in_rounds);
  }
  std::vector<size_t> counts(size_t(c.world_ranks), call.count), displs;
  for (int w = 0; w < c.world_ranks; ++w) displs.push_back(size_t(w) * call.count);
  Call v = call;
  v.coll = Coll::kAlltoAllv;
  v.sendcounts = v.recvcounts = counts.data();
  v.sdispls = v.rdispls = displs.data();
  return direct(c, v, true);
}

Status alltoallv(Context& c, const Call& call) { return direct(c, call, false); }

}  // namespace stratacl::hier
