// AlltoAllv's published region: what a rank sends each peer (coll/alltoallv.cc).
#pragma once

#include <cstdint>

namespace stratacl {

// One per peer, in the sender's control block: count and displacement, in elements.
struct AlltoallvBlock {
  uint64_t count = 0;
  uint64_t displ = 0;
};

}  // namespace stratacl
