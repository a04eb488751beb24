// What a rank publishes for a MoE step, in a region of its control block (sync/region.h): its
// token rows, scales, expert ids and weights for dispatch, its expert outputs for combine, as
// RemoteRefs its peers pull from.
#pragma once

#include <cstdint>

#include "fabric/remote_ref.h"

namespace stratacl::moe {

struct Lines {
  RemoteRef x, scales, topk, weights, expert_out;
  uint64_t plan_digest = 0;  // every rank's plan must be the same
  uint64_t handle_id = 0;    // the step of the dispatch whose routing is reused or followed
  int32_t tokens = 0;        // T of this rank's dispatch
  int32_t prepared = 0;      // sclResult_t: why this rank cannot take part (0: it can)
  int32_t packed = 0;        // expert-major expert_out staged packed (Stager::publish_prefixes)
  int32_t reserved = 0;
};

}  // namespace stratacl::moe
