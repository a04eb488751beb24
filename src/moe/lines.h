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
  uint64_t handle_id = 0;    // the routing a dispatch reuses or a combine follows
  int32_t tokens = 0;        // T of this rank's dispatch
  int32_t reserved = 0;
};

}  // namespace stratacl::moe
