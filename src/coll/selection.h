// The algorithm selection table: data, not code. Thresholds come from measurement
// (docs/TUNING-LOG.md) and can be overridden with STRATACL_ONESHOT_MAX_BYTES.
#pragma once

#include <cstddef>
#include <cstdint>

namespace stratacl {

// Whether an allreduce of `bytes` per rank on `nranks` local ranks runs one-shot (else
// two-shot). `all_out_of_place`: no rank runs in place, which every rank learns from the step's
// descriptors, so all ranks decide alike. In place, one-shot must reduce into scratch and copy
// out after the done-count, and its peers read lines it has just written: it wins only for
// small payloads.
// `forced_max` is STRATACL_ONESHOT_MAX_BYTES (-1: use the table), checked to agree at init.
bool use_oneshot(int nranks, size_t bytes, bool all_out_of_place, int64_t forced_max);

}  // namespace stratacl
