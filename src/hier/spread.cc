#include "hier/spread.h"

#include <cstring>

#include "coll/algorithms.h"

namespace stratacl::hier {

Status Spread::reserve(Context& c, size_t bytes, size_t lead) {
  const net::Topology& t = c.topo();
  bytes_ = bytes;
  slots_ = size_t(t.hosts - 2) / size_t(t.per_host) + 1;  // the most a rank hears: ceil((H-1)/L)
  // The word takes 8 bytes and the lead is rounded up to a line, so that every block, and every
  // message in it, starts at a multiple of the element size.
  block_ = slots_ * bytes + sizeof(int64_t);
  const size_t at = (lead + 63) / 64 * 64;
  SCL_ASSIGN_OR_RETURN(char* base, c.heap_scratch.get(at + block_ * size_t(t.per_host + 1)));
  lead_ = base;
  mine_ = base + at;
  all_ = mine_ + block_;
  return Status::Ok();
}

Status Spread::exchange(Context& c, const Call& call, const char* mine, size_t stride, int tag) {
  const net::Topology& t = c.topo();
  const int H = t.hosts, L = t.per_host;
  const size_t data = slots_ * bytes_;
  SCL_TRY(
      c.rail_step(c.rail.share(mine, stride, bytes_, mine_, t.local + 1, L, c.local.deadline())));
  const int64_t crossed = c.outcome().code();
  std::memcpy(mine_ + data, &crossed, sizeof crossed);
  Call g = local_call(call, Coll::kAllGather, LocalBuffer{mine_, MemKind::kHeap}, all_,
                      MemKind::kHeap, block_, tag);
  g.dtype = sclUint8;
  SCL_TRY(c.local_step(g));
  if (!c.outcome().ok()) return c.outcome();
  for (int k = 0; k < L; ++k) {
    int64_t heard = sclSuccess;
    std::memcpy(&heard, all_ + size_t(k) * block_ + data, sizeof heard);
    if (heard != sclSuccess) return c.failed_elsewhere(coll_name(call.coll), k, int32_t(heard));
  }
  // Host g's message came to local rank (far - 1) mod L, far = the hosts from g on to us, as its
  // ((far - 1) / L)-th slot.
  heard_.assign(size_t(H), nullptr);
  for (int h = 0; h < H; ++h) {
    const int far = (t.host - h + H) % H;
    if (far == 0) continue;
    heard_[size_t(h)] = all_ + size_t((far - 1) % L) * block_ + size_t((far - 1) / L) * bytes_;
  }
  return c.outcome();
}

}  // namespace stratacl::hier
