// Rail::Chunks (net/rail.h): the split of a buffer that the rail's ring, scatter-gather, halves
// and chain broadcast share.
#pragma once

#include <cstddef>

#include "net/rail.h"

namespace stratacl::net {

// A buffer of `count` elements cut into `parts` chunks of nearly one size (where it does not
// divide, some chunks are one element longer).
struct Rail::Chunks {
  char* buf;
  size_t count, es;
  int parts;
  size_t first(int c) const { return count * size_t(c) / size_t(parts); }  // its first element
  size_t bytes(int c) const { return (first(c + 1) - first(c)) * es; }
  char* at(int c) const { return buf + first(c) * es; }
};

}  // namespace stratacl::net
