#include "moe/published.h"

namespace stratacl::moe {

Result<RemoteRef> publish_rows(const CollContext& c, LocalBuffer buf, size_t bytes,
                               size_t row_bytes, StagedBlock* staged) {
  Result<RemoteRef> ref = c.stager.publish_own(Outgoing{buf, 0, 1, bytes}, staged);
  if (ref.ok()) ref->stride = row_bytes;
  return ref;
}

Result<const char*> peer_row(const CollContext& c, int peer, const RemoteRef& ref, size_t row,
                             size_t bytes, std::vector<char>& scratch) {
  Result<const char*> p = c.view_block(peer, ref, row, 0, bytes);
  if (!p.ok() || *p) return p;
  if (scratch.size() < bytes) scratch.resize(bytes);
  SCL_TRY(c.read_block(peer, ref, row, 0, bytes, scratch.data()));
  return static_cast<const char*>(scratch.data());
}

}  // namespace stratacl::moe
