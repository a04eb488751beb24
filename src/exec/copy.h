// Pure data movement. One entry point, so copy engines (DSA, GPU copy engines) can take it over.
#pragma once

#include <cstddef>
#include <cstring>

namespace stratacl {

inline void copy_bytes(void* dst, const void* src, size_t bytes) {
  if (bytes && dst != src) std::memcpy(dst, src, bytes);
}

}  // namespace stratacl
