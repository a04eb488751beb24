// Every rank's copy of one input block, for a reduction, a tile at a time. Inputs that are mapped
// here (a peer's heap or staging area) are read in place; others (registered foreign buffers,
// read with process_vm_readv) are fetched into a private buffer per peer, so a reduction never
// needs more than one tile of them at once.
#pragma once

#include <cstddef>
#include <vector>

#include "coll/call.h"
#include "coll/context.h"

namespace stratacl {

class InputTiles {
 public:
  // Inputs that must be fetched are fetched this many bytes at a time (it fits L2 with the
  // reduction).
  static constexpr size_t kFetchBytes = 256 << 10;

  // `mine` is our own copy of the block, read in place whatever we published. `worker` names
  // the scratch the tiles use (the part of the job that loads them).
  InputTiles(CollContext& c, const std::vector<CallDesc>& descs, size_t block, const char* mine,
             int worker = 0);
  bool any_fetched() const { return fetched_; }
  // Points srcs()[p] at bytes [offset, offset + bytes) of rank p's block.
  Status load(size_t offset, size_t bytes);
  const void* const* srcs() const { return scratch_.srcs.data(); }

 private:
  CollContext& c_;
  CollContext::Scratch& scratch_;
  const std::vector<CallDesc>& descs_;
  size_t block_;
  const char* mine_;
  bool fetched_ = false;
};

// Reduces block `block` of every rank's input (`count` elements of `call`'s type, in rank order,
// so every rank gets the same bits) into `dst`, cut by bytes over the workers.
Status reduce_inputs(CollContext& c, const std::vector<CallDesc>& descs, size_t block,
                     const char* mine, size_t count, const Call& call, char* dst);

}  // namespace stratacl
