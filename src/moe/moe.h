// MoE expert-parallel dispatch and combine (DeepEP semantics) as steps of the step protocol
// (coll/step.h), on user buffers: a receiver reads every peer's expert ids, computes its own
// layout (no count exchange), and pulls the rows it needs straight into its receive buffer,
// quantising in flight when asked; combine pulls each token's expert outputs back to its rank
// and sums them there in a fixed order. The communicator runs these calls in its issue order.
#pragma once

#include <memory>

#include "coll/context.h"
#include "fabric/memory_kind.h"
#include "fabric/staging.h"
#include "moe/lines.h"
#include "moe/plan.h"
#include "moe/routing.h"
#include "sync/region.h"

namespace stratacl::moe {

// The state behind an sclMoeHandle_t: an id every rank assigns alike (dispatches are issued in
// the same order everywhere), and the routing, once the dispatch that made it completed.
struct Handle {
  uint64_t id = 0;
  int tokens = 0;  // this rank's T
  std::shared_ptr<const Routing> routing;
};

// The staging blocks of a plan's foreign buffers (fabric/staging.h), kept from call to call: a
// block is refilled only after the call that filled it completed (every peer done reading), and
// repeated calls fault its pages in once instead of every time.
struct Staging {
  StagedBlock x, scales, topk, weights, expert_out;
};

enum class Kind { kCreate, kDispatch, kCombine, kDestroy };

struct Call {
  Kind kind = Kind::kCreate;
  std::shared_ptr<const Plan> plan;
  std::shared_ptr<Handle> handle;    // dispatch: filled (or reused); combine: followed
  std::shared_ptr<Staging> staging;  // the plan's
  bool reuse = false;                // dispatch with the routing of `handle`
  // Dispatch.
  LocalBuffer x, scales, topk, weights;
  int tokens = 0;
  sclMoeRecv_t out{};
  // Combine.
  LocalBuffer expert_out;
  const float* combine_weights = nullptr;
  char* combined = nullptr;
};

// Combine's buffers against what the dispatch of `routing` left this rank: `expert_out` holds the
// rows peers address (a heap block must be that large) and `out` (`out_bytes`) does not overlap
// them. Names the argument at fault (sclInvalidArgument).
Status check_combine_buffers(const Plan& p, const Routing& routing, const void* expert_out,
                             const void* out, size_t out_bytes);

// "moe-dispatch" and so on, for messages.
const char* call_name(Kind kind);

// Runs one MoE call: a step on the communicator's context, publishing in `lines`.
Status run(CollContext& c, Region<Lines> lines, const Call& call);

}  // namespace stratacl::moe
