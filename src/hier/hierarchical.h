// Collectives across hosts, composed of the intra-host zero-copy algorithms (src/coll, over the
// host's ranks) and the inter-host ones along rails (src/net/rail.h). The shape of each, with L
// ranks per host and H hosts:
//   allreduce       local reduce-scatter into the rank's shard of recvbuff; a rail allreduce of
//                   that shard (every local rank drives its own shard, in parallel); local
//                   allgather in place. Small buffers whose copies on every rail stay small: one
//                   local allreduce; then at 2 hosts every rail reduces the whole buffer, from 3
//                   each rank sends the host's sum to its share of the other hosts and a local
//                   allgather brings every rank all the sums.
//   allgather       each rank's block goes along its rail; then one local allgather of H runs
//                   (Call::runs), one per host's blocks, in place.
//   broadcast       large buffers split over the rails: a local scatter on the root's host,
//                   every rail broadcasts its block, one local allgather per host. Others: the
//                   root's rail carries the buffer to every host; local broadcast there.
//   reduce          local reduce to the root's local index; that rail reduces to the root.
//   reducescatter   one local reduce-scatter of H runs, one per host's range of the input; the
//                   rail exchanges the partials. Alone on its host, a rank's rail takes the
//                   input's blocks as they are (so does its allreduce's). Small ones from 3
//                   hosts, where the rail takes one direct round: one local allreduce, then
//                   each host's partials go there once and a local allgather brings every rank
//                   its block of them, as the small allreduce's sums (hier/spread.h).
//   barrier         local barrier, rail 0 barrier, a local broadcast of rail 0's outcome.
//   alltoall        small blocks: one local step gathers, for each host, the blocks of the
//                   host's ranks for our rail peer there; one message per rail and host pair.
//                   Larger ones as alltoallv, their blocks one-sided from the one-sided size.
//   alltoallv       local alltoallv for the host's blocks; the rest straight over the network.
//   gather/scatter  the root's host locally; other ranks' blocks straight to or from the root.
//   send/recv       local single copy within the host; network messages between hosts.
//   MoE             the ids allgathered, the rows packed and sent by alltoallv (hier/moe.cc).
// Averages sum everywhere and divide once at the end, so every rank divides by the world size;
// those of fp16 and fp8 divide every input by it first and sum the quotients (average_first()).
#pragma once

#include <memory>
#include <span>

#include "coll/call.h"
#include "coll/context.h"
#include "coll/p2p.h"
#include "moe/moe.h"
#include "net/rail.h"

namespace stratacl::hier {

// Memory for partial results, kept across calls and never cleared (its users write it first):
// a fresh zeroed buffer per call cost more than the network step at 16 MiB.
class Scratch {
 public:
  char* get(size_t bytes);

 private:
  std::unique_ptr<char[]> bytes_;
  size_t size_ = 0;
};

// Heap memory (sclMemAlloc's) kept across calls, for buffers the library fills itself: the ranks
// of a host read it in place and the network finds it registered, where a fresh vector would be
// staged, registered and faulted in on every call. Never cleared.
class HeapScratch {
 public:
  HeapScratch() = default;
  ~HeapScratch() { release(); }
  HeapScratch(const HeapScratch&) = delete;
  HeapScratch& operator=(const HeapScratch&) = delete;
  Result<char*> get(size_t bytes);
  // Back to the heap; or forgotten, when a peer of the host may still read it (after a failure
  // its call may outlive ours: the communicator's own blocks are leaked then too).
  void release();
  void leak() { bytes_ = nullptr, size_ = 0; }

 private:
  char* bytes_ = nullptr;
  size_t size_ = 0;
};

// What MoE across hosts keeps per communicator (hier/moe.cc).
struct MoeState {
  uint64_t dispatches = 0;  // numbers handles alike on every rank
  HeapScratch send, recv;   // the packed rows
  void release() { send.release(), recv.release(); }
  void leak() { send.leak(), recv.leak(); }
};

struct Context {
  CollContext& local;  // this host's ranks
  net::Rail& rail;
  Scratch& scratch;
  int world_rank = 0, world_ranks = 0;
  MoeState& moe;
  HeapScratch& heap_scratch;  // the alltoall's packs, the spread allreduce's sums
  const net::Topology& topo() const { return rail.topology(); }
  // A local step's error, with the host it happened on: its messages number ranks within the
  // host (local rank k is world rank first + k).
  Status on_host(Status s) const;
  // The call failed on another host (`code`), which local rank `heard_by` heard over the
  // network and told this host's ranks in a local step: `call` names the collective.
  Status failed_elsewhere(const char* call, int heard_by, int32_t code) const;
  // A collective among this host's ranks (a plain copy when the host has one rank).
  Status run_local(const Call& call);

  // The algorithms whose local steps come before network operations of theirs (allreduce,
  // reduce, reduce-scatter, barrier, the broadcast split over the rails, alltoall(v), gather,
  // scatter) take every step through these two, and return outcome(), so that a call that fails on
  // one host still takes every host through the same rail batches, and the next call finds them in
  // step; they say so to the rail first (net::Rail::go_on_through_failures). A step among this
  // host's ranks; skipped where one of the call's failed here already (the host's ranks are out of
  // step with each other then). An error that leaves the communicator usable (the ranks' calls
  // mismatched) becomes the call's, and its later rail operations run void (net::Rail::fail_call),
  // telling the other hosts. Only a fatal error comes back: the caller returns it at once (the
  // communicator is revoked; the heartbeat tells every host).
  Status local_step(const Call& call);
  // A rail operation's result, kept as local_step() keeps an error. Another host's failure
  // arrives so: the call goes on, its local steps too (the host's ranks are still in step), and
  // ends with that error.
  Status rail_step(Status s) { return keep(std::move(s), false); }
  // The call's first error, or ok.
  const Status& outcome() const { return state.failure; }
  Status keep(Status s, bool local);

  // The call's state, kept by the steps above (empty at first).
  struct CallState {
    Status failure;
    bool local_failed = false;
  } state;
};

// Every rank's `bytes` at `mine` (the same size on every rank) into `all`, in rank order: the
// library's own exchanges (cards, addresses, ids) over the world.
Status allgather_bytes(Context& c, const void* mine, size_t bytes, void* all);
// Runs `call` across hosts, its kind and arguments in every message (net::Rail::begin).
Status run(Context& c, const Call& call);
void begin(Context& c, const Call& call);

Status allreduce(Context& c, const Call& call);
Status allgather(Context& c, const Call& call);
Status broadcast(Context& c, const Call& call);
Status reduce(Context& c, const Call& call);
Status reduce_scatter(Context& c, const Call& call);
Status barrier(Context& c);
Status alltoall(Context& c, const Call& call);
Status alltoallv(Context& c, const Call& call);
Status gather(Context& c, const Call& call);
Status scatter(Context& c, const Call& call);
Status p2p(Context& c, P2PState& state, std::span<const P2POp> ops);
// MoE create, dispatch, combine and destroy across hosts (hier/moe.cc).
Status run_moe(Context& c, const moe::Call& call);

// How many of the `hosts` runs one local allgather or reduce-scatter takes (Call::runs), each
// run `blocks_per_run` blocks: all of them, unless a round of the staging area (`round_bytes`,
// coll/round.h) would not hold one element of every block of the step (thousands of ranks with
// the smallest STRATACL_STAGING_BYTES); then as many as it holds, step after step, where more
// would overrun the area. Alike on every rank of the host: the round is the smallest staging area
// of them all.
int runs_per_step(uint64_t round_bytes, int hosts, size_t blocks_per_run, size_t element_bytes);

// A broadcast splits over the rails (hier/broadcast.cc) where each rail's block is at least
// this. The split adds a message on every rail and a local phase (the root host's scatter). Where
// each local rank has a link of its own, it saves (L - 1) / L of the buffer's time on the wire,
// at least the added message's cost from a block of the bytes a link moves meanwhile
// (net::Rail::kChainBytesPerMessageCost). It also spreads the receiving hosts' copies over all
// their ranks. Here, with every link on the same 2 cores, splitting every size lost at blocks of
// 8-16 KiB, mostly lost at 32 KiB, was mixed at 64 KiB and gained at 128 KiB in 2 of 3 runs
// (docs/PERFORMANCE.md, "Broadcast split over the rails").
constexpr size_t kSplitBroadcastMinBlock = net::Rail::kChainBytesPerMessageCost;
// Whether a broadcast of `count` elements is large enough to split over the rails (alike on
// every rank).
bool broadcast_splits(const net::Topology& t, size_t count, size_t element_bytes);
// The split broadcast's local allgather carries this root plus the count's tail in its
// signature (allgathers ignore the root), so that it never pairs with the local allgather of
// another broadcast whose count differs only in its tail, where the tail's own local broadcast
// would otherwise wait alone for the ranks that have none. (A hierarchical allgather's local
// step has root 0 and H runs.)
constexpr int kSplitBroadcastRoot = 2;

// A call on this host's ranks, with the world call's dtype and op (an average sums).
Call local_call(const Call& world, Coll coll, LocalBuffer send, char* recv, MemKind recv_kind,
                size_t count, int root = 0);
// The summing op of `op` (an average sums), and the division that finishes an average.
sclRedOp_t summing(sclRedOp_t op);
void finish_average(const Call& call, char* buf, size_t count, int world_ranks);
// An average of fp16 or fp8 (whose range a sum of a few inputs leaves: 65504, 448, 57344) divides
// its input by the world size first, in float and rounded once, into `block`, and sums the
// quotients: summed first, host by host and then over hosts, its partial sums are rounded to the
// dtype at every level and could overflow where the average fits. As NCCL's pre-multiplied
// average, it trades that for the quotients' rounding (an e4m3 input below 2^-9 x the world
// size rounds to 0 or 2^-9). Other dtypes keep the sum, divided once at the end.
Status average_first(Call& call, HeapScratch& block, int world_ranks);

}  // namespace stratacl::hier
