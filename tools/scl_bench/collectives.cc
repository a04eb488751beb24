#include "collectives.h"

#include <array>
#include <cstring>

#include "datatypes.h"

namespace stratacl::bench {
namespace {

// Per-rank share of a split buffer.
size_t share(const Placement& p) { return p.count / static_cast<size_t>(p.nranks); }

double factor_one(int) { return 1.0; }
double factor_allreduce(int n) { return 2.0 * (n - 1) / n; }
double factor_split(int n) { return static_cast<double>(n - 1) / n; }

LaunchResult done(sclResult_t result, const char* call) { return {result, call}; }

// allreduce: every rank reduces `count` elements into `count` elements.
Geometry allreduce_geometry(const Placement& p) { return {p.count, p.count, 0, 0}; }
Source allreduce_source(const Placement&, size_t j) { return {true, 0, j}; }
LaunchResult allreduce_launch(const LaunchArgs& a) {
  return done(sclAllReduce(a.send, a.recv, a.placement.count, a.type, a.op, a.comm, nullptr),
              "sclAllReduce");
}

// reducescatter: `count` elements in, rank r keeps reduced chunk r. In place, the output is
// the rank's own chunk of the input.
Geometry reduce_scatter_geometry(const Placement& p) {
  return {p.count, share(p), 0, static_cast<size_t>(p.rank) * share(p)};
}
Source reduce_scatter_source(const Placement& p, size_t j) {
  return {true, 0, static_cast<size_t>(p.rank) * share(p) + j};
}
LaunchResult reduce_scatter_launch(const LaunchArgs& a) {
  return done(sclReduceScatter(a.send, a.recv, share(a.placement), a.type, a.op, a.comm, nullptr),
              "sclReduceScatter");
}

// allgather: each rank contributes count/n elements, everyone receives all of them in rank
// order. In place, the input is the rank's own chunk of the output.
Geometry allgather_geometry(const Placement& p) {
  return {share(p), p.count, static_cast<size_t>(p.rank) * share(p), 0};
}
Source allgather_source(const Placement& p, size_t j) {
  return {false, static_cast<int>(j / share(p)), j % share(p)};
}
LaunchResult allgather_launch(const LaunchArgs& a) {
  return done(sclAllGather(a.send, a.recv, share(a.placement), a.type, a.comm, nullptr),
              "sclAllGather");
}

// alltoall: chunk k of rank r's input lands in chunk r of rank k's output.
Geometry alltoall_geometry(const Placement& p) { return {p.count, p.count, 0, 0}; }
Source alltoall_source(const Placement& p, size_t j) {
  return {false, static_cast<int>(j / share(p)),
          static_cast<size_t>(p.rank) * share(p) + j % share(p)};
}
LaunchResult alltoall_launch(const LaunchArgs& a) {
  return done(sclAlltoAll(a.send, a.recv, share(a.placement), a.type, a.comm, nullptr),
              "sclAlltoAll");
}

// broadcast: the root's `count` elements reach every rank; only the root's input is read.
Geometry broadcast_geometry(const Placement& p) {
  return {p.rank == p.root ? p.count : 0, p.count, 0, 0};
}
Source broadcast_source(const Placement& p, size_t j) { return {false, p.root, j}; }
LaunchResult broadcast_launch(const LaunchArgs& a) {
  return done(
      sclBroadcast(a.send, a.recv, a.placement.count, a.type, a.placement.root, a.comm, nullptr),
      "sclBroadcast");
}

// reduce: like allreduce, but only the root receives (and checks) the result.
Geometry reduce_geometry(const Placement& p) {
  return {p.count, p.rank == p.root ? p.count : 0, 0, 0};
}
Source reduce_source(const Placement&, size_t j) { return {true, 0, j}; }
LaunchResult reduce_launch(const LaunchArgs& a) {
  return done(
      sclReduce(a.send, a.recv, a.placement.count, a.type, a.op, a.placement.root, a.comm, nullptr),
      "sclReduce");
}

// gather: each rank sends count/n elements; the root receives all of them in rank order.
Geometry gather_geometry(const Placement& p) {
  return {share(p), p.rank == p.root ? p.count : 0, 0, 0};
}
Source gather_source(const Placement& p, size_t j) {
  return {false, static_cast<int>(j / share(p)), j % share(p)};
}
LaunchResult gather_launch(const LaunchArgs& a) {
  return done(
      sclGather(a.send, a.recv, share(a.placement), a.type, a.placement.root, a.comm, nullptr),
      "sclGather");
}

// scatter: chunk r of the root's `count` elements lands on rank r.
Geometry scatter_geometry(const Placement& p) {
  return {p.rank == p.root ? p.count : 0, share(p), 0, 0};
}
Source scatter_source(const Placement& p, size_t j) {
  return {false, p.root, static_cast<size_t>(p.rank) * share(p) + j};
}
LaunchResult scatter_launch(const LaunchArgs& a) {
  return done(
      sclScatter(a.send, a.recv, share(a.placement), a.type, a.placement.root, a.comm, nullptr),
      "sclScatter");
}

// sendrecv: a ring shift, rank r sends to r+1 and receives from r-1, as one group so the
// pair cannot deadlock.
int next_rank(const Placement& p) { return (p.rank + 1) % p.nranks; }
int prev_rank(const Placement& p) { return (p.rank - 1 + p.nranks) % p.nranks; }
Geometry sendrecv_geometry(const Placement& p) { return {p.count, p.count, 0, 0}; }
Source sendrecv_source(const Placement& p, size_t j) { return {false, prev_rank(p), j}; }
LaunchResult sendrecv_launch(const LaunchArgs& a) {
  const Placement& p = a.placement;
  if (sclResult_t r = sclGroupStart(); r != sclSuccess) return done(r, "sclGroupStart");
  sclResult_t send = sclSend(a.send, p.count, a.type, next_rank(p), a.comm, nullptr);
  sclResult_t recv = sclSuccess;
  if (send == sclSuccess) recv = sclRecv(a.recv, p.count, a.type, prev_rank(p), a.comm, nullptr);
  // The group is closed even after a failed call so the thread is not left inside it.
  sclResult_t end = sclGroupEnd();
  if (send != sclSuccess) return done(send, "sclSend");
  if (recv != sclSuccess) return done(recv, "sclRecv");
  return done(end, "sclGroupEnd");
}

// hypercube (nccl-tests' hypercube_perf): an allgather by recursive doubling over sends and
// receives, on power-of-two rank counts. The rank's own chunk is copied into place first; in
// step k (mask = 2^k) each rank swaps with rank ^ mask the mask chunks it holds (those of its
// aligned block of mask ranks) for the peer's, as one group. nccl-tests counts its algbw as
// the bytes received, (n-1)/n of the output, per second, and its busbw as equal to it.
double factor_received(int n) { return static_cast<double>(n - 1) / n; }
LaunchResult hypercube_launch(const LaunchArgs& a) {
  const Placement& p = a.placement;
  const size_t chunk = share(p) * dtype_size(a.type);
  char* out = static_cast<char*>(a.recv);
  char* own = out + static_cast<size_t>(p.rank) * chunk;
  if (own != a.send && chunk > 0) std::memcpy(own, a.send, chunk);
  for (int mask = 1; mask < p.nranks; mask <<= 1) {
    const int peer = p.rank ^ mask;
    const int held = p.rank & ~(mask - 1);  // the first rank of the block this rank holds
    const int wanted = held ^ mask;         // the first rank of the peer's block
    if (sclResult_t r = sclGroupStart(); r != sclSuccess) return done(r, "sclGroupStart");
    const size_t count = share(p) * static_cast<size_t>(mask);
    sclResult_t send =
        sclSend(out + static_cast<size_t>(held) * chunk, count, a.type, peer, a.comm, nullptr);
    sclResult_t recv = sclSuccess;
    if (send == sclSuccess) {
      recv =
          sclRecv(out + static_cast<size_t>(wanted) * chunk, count, a.type, peer, a.comm, nullptr);
    }
    sclResult_t end = sclGroupEnd();
    if (send != sclSuccess) return done(send, "sclSend");
    if (recv != sclSuccess) return done(recv, "sclRecv");
    if (end != sclSuccess) return done(end, "sclGroupEnd");
  }
  return done(sclSuccess, "");
}

constexpr std::array<Collective, 10> kCollectives = {{
    {"allreduce", true, false, false, true, factor_allreduce, allreduce_geometry, allreduce_source,
     allreduce_launch},
    {"reducescatter", true, false, true, true, factor_split, reduce_scatter_geometry,
     reduce_scatter_source, reduce_scatter_launch},
    {"allgather", false, false, true, true, factor_split, allgather_geometry, allgather_source,
     allgather_launch},
    // The library does not support send == recv for alltoall, so no in-place form.
    {"alltoall", false, false, true, false, factor_split, alltoall_geometry, alltoall_source,
     alltoall_launch},
    {"broadcast", false, true, false, true, factor_one, broadcast_geometry, broadcast_source,
     broadcast_launch},
    {"reduce", true, true, false, true, factor_one, reduce_geometry, reduce_source, reduce_launch},
    {"gather", false, true, true, false, factor_split, gather_geometry, gather_source,
     gather_launch},
    {"scatter", false, true, true, false, factor_split, scatter_geometry, scatter_source,
     scatter_launch},
    {"sendrecv", false, false, false, false, factor_one, sendrecv_geometry, sendrecv_source,
     sendrecv_launch},
    {"hypercube", false, false, true, true, factor_one, allgather_geometry, allgather_source,
     hypercube_launch, factor_received, 16, true},
}};

}  // namespace

std::span<const Collective> all_collectives() { return kCollectives; }

const Collective* find_collective(std::string_view name) {
  for (const Collective& collective : kCollectives) {
    if (collective.name == name) return &collective;
  }
  return nullptr;
}

size_t element_count(const Collective& collective, size_t bytes, size_t elem_size, int nranks) {
  size_t count = bytes / elem_size;
  if (!collective.splits) return count;
  size_t per_rank = count / static_cast<size_t>(nranks);
  if (collective.chunk_align_bytes > elem_size) {
    const size_t align = collective.chunk_align_bytes / elem_size;  // elements, a power of two
    per_rank &= ~(align - 1);
  }
  return per_rank * static_cast<size_t>(nranks);
}

}  // namespace stratacl::bench
