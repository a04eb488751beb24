#include "coll/context.h"

#include "coll/alltoallv.h"
#include "coll/p2p.h"

namespace stratacl {

CollRegions CollRegions::declare(RegionLayout& layout, int nranks) {
  CollRegions r;
  r.step = layout.add<StepLines>();
  r.p2p_send = layout.add<P2PChannel>(size_t(nranks));
  r.p2p_ack = layout.add<P2PAck>(size_t(nranks));
  r.alltoallv = layout.add<AlltoallvBlock>(size_t(nranks));
  return r;
}

namespace {
Status in_call(const CollContext& c, const Status& s) {
  return s.ok() ? s : Status(s.code(), c.where() + ": " + s.message()).with_culprit(s.culprit());
}
}  // namespace

Result<const char*> CollContext::view_block(int peer, const RemoteRef& ref, size_t block,
                                            uint64_t offset, uint64_t bytes) const {
  Result<const char*> p = mem.view(peer, ref, block, offset, bytes);
  if (!p.ok()) return in_call(*this, p.status());
  return p;
}

Status CollContext::read_block(int peer, const RemoteRef& ref, size_t block, uint64_t offset,
                               uint64_t bytes, char* dst, bool stream) const {
  if (bytes == 0 || bytes < exec->min_part_bytes()) {
    return in_call(*this, mem.read(peer, ref, block, offset, bytes, dst, stream));
  }
  SCL_ASSIGN_OR_RETURN(const char* src, view_block(peer, ref, block, offset, bytes));
  if (src) {  // mapped: a pure move
    exec->copy(dst, src, bytes, stream);
    return Status::Ok();
  }
  // Read through the peer's process (CMA): every worker reads its part.
  return in_call(*this, exec->split(bytes, 1, [&](int, Range r) {
    return mem.read(peer, ref, block, offset + r.begin, r.size(), dst + r.begin, stream);
  }));
}

void CollContext::copy(char* dst, const char* src, size_t bytes, bool stream) const {
  exec->copy(dst, src, bytes, stream);
}

std::string CollContext::where() const {
  return std::string(call_name) + " #" + std::to_string(call_index) + " (step " +
         std::to_string(seq) + ")";
}

}  // namespace stratacl
