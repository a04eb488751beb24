// Publishing a rank's MoE arrays and reading its peers' rows: fabric/staging.h and the peer-memory
// seam, with rows as blocks.
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

// Row `row` of what `peer` published as `ref` (rows of `bytes`): a pointer to it where it is mapped
// here, else read into `scratch`.
Result<const char*> peer_row(const CollContext& c, int peer, const RemoteRef& ref, size_t row,
                             size_t bytes, std::vector<char>& scratch);

}  // namespace stratacl::moe
