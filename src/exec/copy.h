// Pure data movement. One entry point per kind of copy, so copy engines (DSA, GPU copy engines)
// can take them over.
#pragma once

#include <cstddef>
#include <cstring>

namespace stratacl {

inline void copy_bytes(void* dst, const void* src, size_t bytes) {
  if (bytes && dst != src) std::memcpy(dst, src, bytes);
}

// The same with non-temporal stores: the destination lines are not read for ownership first
// and not kept in cache. For outputs of calls too large for the caches, where an ordinary store
// costs a read, a write and an eviction; they cost only the write.
void stream_bytes(void* dst, const void* src, size_t bytes);

// True when a call whose rank writes `out_bytes` should copy with stream_bytes
// (STRATACL_NT_MIN_BYTES).
bool streaming_pays(size_t out_bytes);

// copy_bytes or stream_bytes, as `stream` says.
inline void copy_out(void* dst, const void* src, size_t bytes, bool stream) {
  if (stream && dst != src) {
    stream_bytes(dst, src, bytes);
  } else {
    copy_bytes(dst, src, bytes);
  }
}

}  // namespace stratacl
