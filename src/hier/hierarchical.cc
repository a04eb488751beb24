#include "hier/hierarchical.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "coll/algorithms.h"
#include "coll/step.h"
#include "core/dtype.h"
#include "fabric/heap.h"
#include "reduce/reduce.h"

namespace stratacl::hier {

Call local_call(const Call& world, Coll coll, LocalBuffer send, char* recv, MemKind recv_kind,
                size_t count, int root) {
  Call c;
  c.coll = coll;
  c.dtype = world.dtype;
  c.op = summing(world.op);
  c.premultiplied = world.premultiplied;
  c.root = root;
  c.count = count;
  c.send = send;
  c.recv = recv;
  c.recv_kind = recv_kind;
  return c;
}

Status Context::on_host(Status s) const {
  if (s.ok()) return s;
  const net::Topology& t = topo();
  char where[96];
  std::snprintf(where, sizeof where, "%s %d (local rank k is rank %d + k): ", t.unit(), t.host,
                t.world_of(t.host, 0));
  std::string message = where;
  message += s.message();
  return Status(s.code(), std::move(message));
}

Status Context::failed_elsewhere(const char* call, int heard_by, int32_t code) const {
  return on_host(Errorf(peer_result(code),
                        "the %s failed on another %s (local rank %d heard it over the network)",
                        call, topo().unit(), heard_by));
}

char* Scratch::get(size_t bytes) {
  if (bytes > size_) {
    bytes_.reset(new char[bytes]);  // default-initialised: not cleared
    size_ = bytes;
  }
  return bytes_.get();
}

void HeapScratch::release() {
  if (Heap* heap = existing_heap(); heap && bytes_) (void)heap->release(bytes_);
  leak();
}

Result<char*> HeapScratch::get(size_t bytes) {
  if (bytes <= size_ && bytes_) return bytes_;
  SCL_ASSIGN_OR_RETURN(auto* heap, Heap::instance());
  release();  // the call before completed: every peer is done with it
  SCL_ASSIGN_OR_RETURN(void* p, heap->allocate(std::max<size_t>(bytes, 1)));
  bytes_ = static_cast<char*>(p);
  size_ = bytes;
  return bytes_;
}

int runs_per_step(uint64_t round_bytes, int hosts, size_t blocks_per_run, size_t element_bytes) {
  const uint64_t fit = round_bytes / (blocks_per_run * element_bytes);
  return int(std::clamp<uint64_t>(fit, 1, uint64_t(hosts)));
}

Status Context::run_local(const Call& call) {
  if (local.nranks > 1) return on_host(run_collective(local, call));
  // Alone on the host: every collective is its own input (the ops here sum, never average); an
  // allgather's or reduce-scatter's runs are one block each, back to back.
  const size_t es = dtype_size(call.dtype);
  size_t bytes = call.count * size_t(call.runs) * es;
  const char* from = call.send.ptr;
  char* to = call.recv;
  switch (call.coll) {
    case Coll::kBarrier:
      return Status::Ok();
    case Coll::kAlltoAllv:
      bytes = call.sendcounts[0] * es;
      from += call.sdispls[0] * es, to += call.rdispls[0] * es;
      break;
    default:
      break;
  }
  if (from && to && from != to && bytes) local.copy(to, from, bytes);
  return Status::Ok();
}

Status Context::local_step(const Call& call) {
  return state.local_failed ? Status::Ok() : keep(run_local(call), true);
}

Status Context::keep(Status s, bool local) {
  if (s.ok()) return s;
  // A failed network batch closes the endpoint: the communicator is lost as with a fatal error.
  if (is_fatal(s) || rail.endpoint().closed()) {
    // Where the host's own step failed first, that failure is the call's news; what ended its
    // void rail steps (peers in another call that never took part) follows it.
    if (!state.local_failed) return s;
    // The mismatch's code where the endpoint has closed (the communicator goes with it), the
    // fatal one's where it has not, so that the communicator is revoked either way.
    return Status(rail.endpoint().closed() ? state.failure.code() : s.code(),
                  state.failure.message() + "; then, in the call's network step: " + s.message());
  }
  if (state.failure.ok()) state.failure = std::move(s);
  if (local) {
    state.local_failed = true;
    rail.fail_call();
  }
  return Status::Ok();
}

// Rail::begin carries a call's kind in 4 bits.
static_assert(uint32_t(Coll::kCount) <= 16, "a call kind no longer fits the tag");

sclRedOp_t summing(sclRedOp_t op) { return op == sclAvg ? sclSum : op; }

void finish_average(const Call& call, char* buf, size_t count, int world_ranks) {
  if (call.op != sclAvg || call.premul.divide_by > 0 || count == 0) return;
  const void* src = buf;
  reduce::reduce_n(buf, &src, 1, count, call.dtype, sclAvg, world_ranks);
}

Status average_first(Call& call, HeapScratch& block, int world_ranks) {
  const bool narrow =
      call.dtype == sclFloat16 || call.dtype == sclFloat8e4m3 || call.dtype == sclFloat8e5m2;
  if (call.op != sclAvg || !narrow) return Status::Ok();
  const size_t elems =
      call.coll == Coll::kReduceScatter ? call.count * size_t(world_ranks) : call.count;
  if (elems > 0) {
    SCL_ASSIGN_OR_RETURN(char* quotients, block.get(elems * dtype_size(call.dtype)));
    const void* in = call.send.ptr;
    reduce::reduce_n(quotients, &in, 1, elems, call.dtype, sclAvg, world_ranks);
    call.send = LocalBuffer{quotients, MemKind::kHeap};
  }
  call.premul.divide_by = world_ranks;
  return Status::Ok();
}

Status allgather_bytes(Context& c, const void* mine, size_t bytes, void* all) {
  Call g;
  g.coll = Coll::kAllGather;
  g.dtype = sclUint8;
  g.count = bytes;
  g.send = LocalBuffer{static_cast<const char*>(mine), MemKind::kForeign};
  g.recv = static_cast<char*>(all);
  return allgather(c, g);
}

Status barrier(Context& c) {
  c.rail.go_on_through_failures();  // its steps go through Context::local_step, rail_step
  Call b;
  b.coll = Coll::kBarrier;
  SCL_TRY(c.local_step(b));
  // Local rank 0 crosses the hosts; then it tells its host's ranks how that went, in a local
  // broadcast that also holds them until it has crossed. So a failure another host's rail said
  // (Context::rail_step) fails every rank of this host, not local rank 0's call alone.
  int32_t crossed = sclSuccess;
  if (c.topo().local == 0) {
    SCL_TRY(c.rail_step(c.rail.barrier(c.local.deadline())));
    crossed = c.outcome().code();
  }
  Call word;
  word.dtype = sclInt32;
  char* at = reinterpret_cast<char*>(&crossed);
  SCL_TRY(c.local_step(local_call(word, Coll::kBroadcast, LocalBuffer{at, MemKind::kForeign}, at,
                                  MemKind::kForeign, 1, 0)));
  if (c.outcome().ok() && crossed != sclSuccess) {
    return c.failed_elsewhere("barrier", 0, crossed);
  }
  return c.outcome();
}

void begin(Context& c, const Call& call) {
  // What every rank passes alike (alltoallv's counts differ by rank, so only its dtype counts).
  uint64_t args = uint64_t(call.dtype);
  if (call.coll != Coll::kAlltoAllv) {
    args ^= uint64_t(signed_op(call)) << 8 ^ uint64_t(uint32_t(call.root)) << 16 ^
            call.count << 24 ^ call.count >> 40;
  }
  c.rail.begin(uint32_t(call.coll), args);
}

Status run(Context& c, const Call& call) {
  begin(c, call);
  switch (call.coll) {
    case Coll::kAllReduce:
      return allreduce(c, call);
    case Coll::kAllGather:
      return allgather(c, call);
    case Coll::kBroadcast:
      return broadcast(c, call);
    case Coll::kReduce:
      return reduce(c, call);
    case Coll::kReduceScatter:
      return reduce_scatter(c, call);
    case Coll::kBarrier:
      return barrier(c);
    case Coll::kAlltoAll:
      return alltoall(c, call);
    case Coll::kAlltoAllv:
      return alltoallv(c, call);
    case Coll::kGather:
      return gather(c, call);
    case Coll::kScatter:
      return scatter(c, call);
    default:
      return Errorf(sclInvalidUsage, "%s across hosts is not supported", coll_name(call.coll));
  }
}

}  // namespace stratacl::hier
