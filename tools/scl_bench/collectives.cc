#include "collectives.h"

#include <array>

namespace stratacl::bench {
namespace {

// Per-rank share of a split buffer.
size_t Share(const Placement& p) { return p.count / static_cast<size_t>(p.nranks); }

double FactorOne(int) { return 1.0; }
double FactorAllReduce(int n) { return 2.0 * (n - 1) / n; }
double FactorSplit(int n) { return static_cast<double>(n - 1) / n; }

LaunchResult Done(sclResult_t result, const char* call) { return {result, call}; }

// allreduce: every rank reduces `count` elements into `count` elements.
Geometry AllReduceGeometry(const Placement& p) { return {p.count, p.count, 0, 0}; }
Source AllReduceSource(const Placement&, size_t j) { return {true, 0, j}; }
LaunchResult AllReduceLaunch(const LaunchArgs& a) {
  return Done(sclAllReduce(a.send, a.recv, a.placement.count, a.type, a.op, a.comm, nullptr),
              "sclAllReduce");
}

// reducescatter: `count` elements in, rank r keeps reduced chunk r. In place, the output is
// the rank's own chunk of the input.
Geometry ReduceScatterGeometry(const Placement& p) {
  return {p.count, Share(p), 0, static_cast<size_t>(p.rank) * Share(p)};
}
Source ReduceScatterSource(const Placement& p, size_t j) {
  return {true, 0, static_cast<size_t>(p.rank) * Share(p) + j};
}
LaunchResult ReduceScatterLaunch(const LaunchArgs& a) {
  return Done(sclReduceScatter(a.send, a.recv, Share(a.placement), a.type, a.op, a.comm, nullptr),
              "sclReduceScatter");
}

// allgather: each rank contributes count/n elements, everyone receives all of them in rank
// order. In place, the input is the rank's own chunk of the output.
Geometry AllGatherGeometry(const Placement& p) {
  return {Share(p), p.count, static_cast<size_t>(p.rank) * Share(p), 0};
}
Source AllGatherSource(const Placement& p, size_t j) {
  return {false, static_cast<int>(j / Share(p)), j % Share(p)};
}
LaunchResult AllGatherLaunch(const LaunchArgs& a) {
  return Done(sclAllGather(a.send, a.recv, Share(a.placement), a.type, a.comm, nullptr),
              "sclAllGather");
}

// alltoall: chunk k of rank r's input lands in chunk r of rank k's output.
Geometry AlltoAllGeometry(const Placement& p) { return {p.count, p.count, 0, 0}; }
Source AlltoAllSource(const Placement& p, size_t j) {
  return {false, static_cast<int>(j / Share(p)),
          static_cast<size_t>(p.rank) * Share(p) + j % Share(p)};
}
LaunchResult AlltoAllLaunch(const LaunchArgs& a) {
  return Done(sclAlltoAll(a.send, a.recv, Share(a.placement), a.type, a.comm, nullptr),
              "sclAlltoAll");
}

// broadcast: the root's `count` elements reach every rank; only the root's input is read.
Geometry BroadcastGeometry(const Placement& p) {
  return {p.rank == p.root ? p.count : 0, p.count, 0, 0};
}
Source BroadcastSource(const Placement& p, size_t j) { return {false, p.root, j}; }
LaunchResult BroadcastLaunch(const LaunchArgs& a) {
  return Done(
      sclBroadcast(a.send, a.recv, a.placement.count, a.type, a.placement.root, a.comm, nullptr),
      "sclBroadcast");
}

// reduce: like allreduce, but only the root receives (and checks) the result.
Geometry ReduceGeometry(const Placement& p) {
  return {p.count, p.rank == p.root ? p.count : 0, 0, 0};
}
Source ReduceSource(const Placement&, size_t j) { return {true, 0, j}; }
LaunchResult ReduceLaunch(const LaunchArgs& a) {
  return Done(
      sclReduce(a.send, a.recv, a.placement.count, a.type, a.op, a.placement.root, a.comm, nullptr),
      "sclReduce");
}

// gather: each rank sends count/n elements; the root receives all of them in rank order.
Geometry GatherGeometry(const Placement& p) {
  return {Share(p), p.rank == p.root ? p.count : 0, 0, 0};
}
Source GatherSource(const Placement& p, size_t j) {
  return {false, static_cast<int>(j / Share(p)), j % Share(p)};
}
LaunchResult GatherLaunch(const LaunchArgs& a) {
  return Done(
      sclGather(a.send, a.recv, Share(a.placement), a.type, a.placement.root, a.comm, nullptr),
      "sclGather");
}

// scatter: chunk r of the root's `count` elements lands on rank r.
Geometry ScatterGeometry(const Placement& p) {
  return {p.rank == p.root ? p.count : 0, Share(p), 0, 0};
}
Source ScatterSource(const Placement& p, size_t j) {
  return {false, p.root, static_cast<size_t>(p.rank) * Share(p) + j};
}
LaunchResult ScatterLaunch(const LaunchArgs& a) {
  return Done(
      sclScatter(a.send, a.recv, Share(a.placement), a.type, a.placement.root, a.comm, nullptr),
      "sclScatter");
}

// sendrecv: a ring shift, rank r sends to r+1 and receives from r-1, as one group so the
// pair cannot deadlock.
int NextRank(const Placement& p) { return (p.rank + 1) % p.nranks; }
int PrevRank(const Placement& p) { return (p.rank - 1 + p.nranks) % p.nranks; }
Geometry SendRecvGeometry(const Placement& p) { return {p.count, p.count, 0, 0}; }
Source SendRecvSource(const Placement& p, size_t j) { return {false, PrevRank(p), j}; }
LaunchResult SendRecvLaunch(const LaunchArgs& a) {
  const Placement& p = a.placement;
  if (sclResult_t r = sclGroupStart(); r != sclSuccess) return Done(r, "sclGroupStart");
  sclResult_t send = sclSend(a.send, p.count, a.type, NextRank(p), a.comm, nullptr);
  sclResult_t recv = sclSuccess;
  if (send == sclSuccess) recv = sclRecv(a.recv, p.count, a.type, PrevRank(p), a.comm, nullptr);
  // The group is closed even after a failed call so the thread is not left inside it.
  sclResult_t end = sclGroupEnd();
  if (send != sclSuccess) return Done(send, "sclSend");
  if (recv != sclSuccess) return Done(recv, "sclRecv");
  return Done(end, "sclGroupEnd");
}

constexpr std::array<Collective, 9> kCollectives = {{
    {"allreduce", true, false, false, true, FactorAllReduce, AllReduceGeometry, AllReduceSource,
     AllReduceLaunch},
    {"reducescatter", true, false, true, true, FactorSplit, ReduceScatterGeometry,
     ReduceScatterSource, ReduceScatterLaunch},
    {"allgather", false, false, true, true, FactorSplit, AllGatherGeometry, AllGatherSource,
     AllGatherLaunch},
    // The library does not support send == recv for alltoall, so no in-place form.
    {"alltoall", false, false, true, false, FactorSplit, AlltoAllGeometry, AlltoAllSource,
     AlltoAllLaunch},
    {"broadcast", false, true, false, true, FactorOne, BroadcastGeometry, BroadcastSource,
     BroadcastLaunch},
    {"reduce", true, true, false, true, FactorOne, ReduceGeometry, ReduceSource, ReduceLaunch},
    {"gather", false, true, true, false, FactorSplit, GatherGeometry, GatherSource, GatherLaunch},
    {"scatter", false, true, true, false, FactorSplit, ScatterGeometry, ScatterSource,
     ScatterLaunch},
    {"sendrecv", false, false, false, false, FactorOne, SendRecvGeometry, SendRecvSource,
     SendRecvLaunch},
}};

}  // namespace

std::span<const Collective> AllCollectives() { return kCollectives; }

const Collective* FindCollective(std::string_view name) {
  for (const Collective& collective : kCollectives) {
    if (collective.name == name) return &collective;
  }
  return nullptr;
}

size_t ElementCount(const Collective& collective, size_t bytes, size_t type_size, int nranks) {
  size_t count = bytes / type_size;
  if (collective.splits) count -= count % static_cast<size_t>(nranks);
  return count;
}

}  // namespace stratacl::bench
