#include "coll/context.h"

#include <cstring>

#include "core/log.h"
#include "exec/copy.h"
#include "fabric/cma.h"

namespace stratacl {

Result<const char*> CollContext::peer_ptr(int peer, uint64_t ref, uint64_t bytes) const {
  const PeerView& p = peers[size_t(peer)];
  if (bytes == 0) return static_cast<const char*>(p.base);
  if (ref == kNoRef || ref > p.bytes || bytes > p.bytes - ref) {
    return Errorf(sclRemoteError, "%s: rank %d published a buffer outside its heap",
                  where().c_str(), peer);
  }
  return static_cast<const char*>(p.base + ref);
}

namespace {

// base + block * stride + offset, or false on overflow.
bool block_address(uint64_t base, uint64_t stride, size_t block, uint64_t offset, uint64_t* out) {
  return !__builtin_mul_overflow(uint64_t(block), stride, out) &&
         !__builtin_add_overflow(*out, base, out) && !__builtin_add_overflow(*out, offset, out);
}

}  // namespace

Result<const char*> CollContext::peer_block(int peer, const CallDesc& d, size_t block,
                                            uint64_t bytes) const {
  uint64_t off;
  if (d.send_va != 0 || d.send_ref == kNoRef ||
      !block_address(d.send_ref, d.send_stride, block, 0, &off)) {
    return Errorf(sclRemoteError, "%s: rank %d published an invalid input reference",
                  where().c_str(), peer);
  }
  return peer_ptr(peer, off, bytes);
}

Status CollContext::read_block(int peer, const CallDesc& d, size_t block, uint64_t offset,
                               uint64_t bytes, char* dst, bool stream) const {
  if (bytes == 0) return Status::Ok();
  if (d.send_va == 0) {
    Result<const char*> src = peer_block(peer, d, block, offset + bytes);
    if (!src.ok()) return src.status();
    copy_out(dst, *src + offset, bytes, stream);
    return Status::Ok();
  }
  // The kernel checks the address against the peer's mappings; we check the arithmetic.
  uint64_t va;
  if (!block_address(d.send_va, d.send_stride, block, offset, &va) || va > UINT64_MAX - bytes) {
    return Errorf(sclRemoteError, "%s: rank %d published an invalid registered buffer",
                  where().c_str(), peer);
  }
  Status s = cma_read(peer, peers[size_t(peer)].pid, va, dst, bytes);
  if (!s.ok()) return Status(s.code(), where() + ": " + s.message());
  return Status::Ok();
}

bool CollContext::cma_usable() const {
  if (cma != kCmaUnknown) return cma == kCmaOk;
  for (int p = 0; p < nranks; ++p) {
    const uint32_t v = peers[size_t(p)].cb->cma.load(std::memory_order_acquire);
    if (v == kCmaUnknown) return false;  // still initialising: stage this call, ask again later
    if (v != kCmaOk) {
      cma = kCmaRefused;
      const int err = int(v >> 8);
      log_warning(
          "rank %d: rank %d cannot read its peers with process_vm_readv: %s%s; registered "
          "buffers on this communicator take the staged path",
          rank, p, strerrorname_np(err) ? strerrorname_np(err) : "?", cma_hint(err));
      return false;
    }
  }
  cma = kCmaOk;
  log_info("rank %d: peers read registered buffers with process_vm_readv", rank);
  return true;
}

std::string CollContext::where() const {
  return std::string(call_name) + " #" + std::to_string(call_index) + " (step " +
         std::to_string(seq) + ")";
}

}  // namespace stratacl
