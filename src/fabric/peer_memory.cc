#include "fabric/peer_memory.h"

#include "exec/copy.h"
#include "fabric/cma.h"

namespace stratacl {
namespace {

// base + block * stride + offset, or false on overflow.
bool block_address(uint64_t base, uint64_t stride, size_t block, uint64_t offset, uint64_t* out) {
  return !__builtin_mul_overflow(uint64_t(block), stride, out) &&
         !__builtin_add_overflow(*out, base, out) && !__builtin_add_overflow(*out, offset, out);
}

Status bad_ref(int peer) {
  return Errorf(sclRemoteError, "rank %d published an invalid buffer reference", peer);
}

}  // namespace

Result<const char*> MappedAccess::view(int peer, uint64_t addr, uint64_t bytes) const {
  const Mapping& h = heaps_[size_t(peer)];
  if (!h.base || addr > h.bytes || bytes > h.bytes - addr) {
    return Errorf(sclRemoteError, "rank %d published a buffer outside its heap", peer);
  }
  return h.base + addr;
}

Status MappedAccess::read(int peer, uint64_t addr, uint64_t bytes, char* dst, bool stream) const {
  SCL_ASSIGN_OR_RETURN(const char* src, view(peer, addr, bytes));
  copy_out(dst, src, bytes, stream);
  return Status::Ok();
}

Status ProcessAccess::read(int peer, uint64_t addr, uint64_t bytes, char* dst, bool stream) const {
  // The kernel checks the address against the peer's mappings; we check the arithmetic.
  if (addr > UINT64_MAX - bytes) return bad_ref(peer);
  if (peer == self_) {
    copy_out(dst, reinterpret_cast<const char*>(addr), bytes, stream);
    return Status::Ok();
  }
  SCL_TRY(cma_read(peer, live_->pid_of(peer), addr, dst, bytes));
  if (live_->is_dead(peer)) {
    return Errorf(sclRemoteError,
                  "rank %d (pid %d) exited during a read of its registered buffer; the data "
                  "read may come from another process",
                  peer, int(live_->pid_of(peer)));
  }
  return Status::Ok();
}

Result<const PeerAccess*> PeerMemory::access(int peer, const RemoteRef& ref) const {
  const size_t k = size_t(ref.kind);
  if (k >= access_.size() || !access_[k]) return bad_ref(peer);
  return access_[k];
}

Result<const char*> PeerMemory::view(int peer, const RemoteRef& ref, size_t block, uint64_t offset,
                                     uint64_t bytes) const {
  SCL_ASSIGN_OR_RETURN(const PeerAccess* a, access(peer, ref));
  uint64_t addr;
  if (!block_address(ref.addr, ref.stride, block, offset, &addr)) return bad_ref(peer);
  return a->view(peer, addr, bytes);
}

Status PeerMemory::read(int peer, const RemoteRef& ref, size_t block, uint64_t offset,
                        uint64_t bytes, char* dst, bool stream) const {
  if (bytes == 0) return Status::Ok();
  SCL_ASSIGN_OR_RETURN(const PeerAccess* a, access(peer, ref));
  uint64_t addr;
  if (!block_address(ref.addr, ref.stride, block, offset, &addr)) return bad_ref(peer);
  return a->read(peer, addr, bytes, dst, stream);
}

}  // namespace stratacl
