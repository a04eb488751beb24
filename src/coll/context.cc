#include "coll/context.h"

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

Result<const char*> CollContext::peer_block(int peer, const CallDesc& d, size_t block,
                                            uint64_t bytes) const {
  uint64_t off;
  if (d.send_ref == kNoRef || __builtin_mul_overflow(uint64_t(block), d.send_stride, &off) ||
      __builtin_add_overflow(off, d.send_ref, &off)) {
    return Errorf(sclRemoteError, "%s: rank %d published an invalid input reference",
                  where().c_str(), peer);
  }
  return peer_ptr(peer, off, bytes);
}

std::string CollContext::where() const {
  return std::string(call_name) + " #" + std::to_string(call_index) + " (step " +
         std::to_string(seq) + ")";
}

}  // namespace stratacl
