// Publishing a rank's MoE arrays and reading its peers' rows: fabric/staging.h and the peer-memory
// seam, with rows (or groups of rows) as blocks.
#pragma once

#include <cstddef>
#include <vector>

#include "coll/context.h"
#include "fabric/staging.h"

namespace stratacl::moe {

// Publishes `bytes` of `buf` as rows of `row_bytes` (block t = row t). Foreign memory is staged
// into `*staged`, which must outlive every peer's reads (the step's done-count).
Result<RemoteRef> publish_rows(const CollContext& c, LocalBuffer buf, size_t bytes,
                               size_t row_bytes, StagedBlock* staged);

// `bytes` at `offset` in block `block` of what `peer` published as `ref`: a pointer to them where
// they are mapped here, else read into `scratch`.
Result<const char*> peer_bytes(const CollContext& c, int peer, const RemoteRef& ref, size_t block,
                               size_t offset, size_t bytes, std::vector<char>& scratch);

// The rows a peer published with publish_rows: one pointer to all of them where they are mapped
// here (heap and staged memory), so that a row costs one memcpy; read row by row otherwise
// (registered memory, through CMA).
class PeerRows {
 public:
  PeerRows() = default;
  // `rows` rows of `row_bytes`; a ref of kind kNone (nothing published) opens empty.
  static Result<PeerRows> open(const CollContext& c, int peer, const RemoteRef& ref, size_t rows,
                               size_t row_bytes);
  bool empty() const { return rows_ == 0; }
  // Copies row `r` to `dst`, non-temporally when `stream`; on the copy engines when there are
  // any, so the row may land only at the executor's next drain().
  Status copy(size_t r, void* dst, bool stream) const;
  // Row `r` where mapped, else read into `scratch`.
  Result<const char*> row(size_t r, std::vector<char>& scratch) const;

 private:
  const CollContext* c_ = nullptr;
  int peer_ = 0;
  RemoteRef ref_;
  size_t rows_ = 0, row_bytes_ = 0;
  const char* base_ = nullptr;  // NULL: not mapped here
};

}  // namespace stratacl::moe
