// The algorithm selection table: data, not code. Thresholds come from measurement
// (docs/PERFORMANCE.md) and can be overridden with STRATACL_ONESHOT_MAX_BYTES.
#pragma once

#include <cstddef>

namespace stratacl {

// Largest per-rank allreduce payload that runs one-shot on `nranks` local ranks.
size_t oneshot_max_bytes(int nranks);

}  // namespace stratacl
