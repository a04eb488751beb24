#include "moe/published.h"

#include "exec/copy.h"

namespace stratacl::moe {

Result<RemoteRef> publish_rows(const CollContext& c, LocalBuffer buf, size_t bytes,
                               size_t row_bytes, StagedBlock* staged) {
  // One block, staged with one copy; peers then address it row by row.
  Result<RemoteRef> ref = c.stager.publish_own(Outgoing{buf, 0, 1, bytes}, staged);
  if (ref.ok()) ref->stride = row_bytes;
  return ref;
}

Result<const char*> peer_bytes(const CollContext& c, int peer, const RemoteRef& ref, size_t block,
                               size_t offset, size_t bytes, std::vector<char>& scratch) {
  Result<const char*> p = c.view_block(peer, ref, block, offset, bytes);
  if (!p.ok() || *p) return p;
  if (scratch.size() < bytes) scratch.resize(bytes);
  SCL_TRY(c.read_block(peer, ref, block, offset, bytes, scratch.data()));
  return static_cast<const char*>(scratch.data());
}

Result<PeerRows> PeerRows::open(const CollContext& c, int peer, const RemoteRef& ref, size_t rows,
                                size_t row_bytes) {
  PeerRows r;
  if (ref.kind == RefKind::kNone || rows == 0) return r;
  r.c_ = &c, r.peer_ = peer, r.ref_ = ref, r.rows_ = rows, r.row_bytes_ = row_bytes;
  SCL_ASSIGN_OR_RETURN(r.base_, c.view_block(peer, ref, 0, 0, rows * row_bytes));
  return r;
}

Status PeerRows::copy(size_t r, void* dst, bool stream) const {
  if (r >= rows_) {
    return Errorf(sclInternalError, "row %zu of rank %d's %zu published rows", r, peer_, rows_);
  }
  if (base_) {  // a pure move: the engines' when there are any (the step drains them)
    c_->exec->copy_async(dst, base_ + r * row_bytes_, row_bytes_, stream);
    return Status::Ok();
  }
  return c_->read_block(peer_, ref_, r, 0, row_bytes_, static_cast<char*>(dst), stream);
}

Result<const char*> PeerRows::row(size_t r, std::vector<char>& scratch) const {
  if (r >= rows_) {
    return Errorf(sclInternalError, "row %zu of rank %d's %zu published rows", r, peer_, rows_);
  }
  if (base_) return base_ + r * row_bytes_;
  if (scratch.size() < row_bytes_) scratch.resize(row_bytes_);
  SCL_TRY(c_->read_block(peer_, ref_, r, 0, row_bytes_, scratch.data()));
  return static_cast<const char*>(scratch.data());
}

}  // namespace stratacl::moe
