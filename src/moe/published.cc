#include "moe/published.h"

namespace stratacl::moe {

Result<RemoteRef> publish_rows(const CollContext& c, LocalBuffer buf, size_t bytes,
                               size_t row_bytes, StagedBlock* staged) {
  // One block, staged with one copy; peers then address it row by row.
  Result<RemoteRef> ref = c.stager.publish_own(Outgoing{buf, 0, 1, bytes}, staged);
  if (ref.ok()) ref->stride = row_bytes;
  return ref;
}

Result<RemoteRef> publish_blocks(const CollContext& c, const Outgoing& out, StagedBlock* staged) {
  if (out.staged_bytes() == 0) return RemoteRef{};  // nothing any peer reads
  return c.stager.publish_own(out, staged);
}

Result<const char*> peer_bytes(const CollContext& c, int peer, const RemoteRef& ref, size_t block,
                               size_t offset, size_t bytes, std::vector<char>& scratch) {
  Result<const char*> p = c.view_block(peer, ref, block, offset, bytes);
  if (!p.ok() || *p) return p;
  if (scratch.size() < bytes) scratch.resize(bytes);
  SCL_TRY(c.read_block(peer, ref, block, offset, bytes, scratch.data()));
  return static_cast<const char*>(scratch.data());
}

}  // namespace stratacl::moe
