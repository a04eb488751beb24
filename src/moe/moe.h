// MoE expert-parallel dispatch and combine (DeepEP semantics) as steps of the step protocol
// (coll/step.h), on user buffers: a receiver reads every peer's expert ids, computes its own
// layout (no count exchange), and pulls the rows it needs straight into its receive buffer,
// quantising in flight when asked; combine pulls each token's expert outputs back to its rank
// and sums them there in a fixed order. The communicator runs these calls in its issue order.
#pragma once

#include <memory>
#include <mutex>

#include "coll/context.h"
#include "fabric/memory_kind.h"
#include "fabric/staging.h"
#include "moe/lines.h"
#include "moe/plan.h"
#include "moe/routing.h"
#include "sync/region.h"

namespace stratacl::moe {

// The state behind an sclMoeHandle_t: this rank's T, and what the dispatch that made it left once
// it completed: its routing, and its id, the communicator step it ran in, which is the same on
// every rank (steps run in lockstep), whatever else failed or succeeded on any rank before. The
// dispatch may complete on a stream's thread while the API reads it on another: hence the lock.
class Handle {
 public:
  explicit Handle(int token_count) : tokens(token_count) {}
  const int tokens;
  struct Made {
    uint64_t id = 0;  // 0: the dispatch has not completed, or failed
    std::shared_ptr<const Routing> routing;
  };
  Made made() const {
    std::lock_guard<std::mutex> lock(mu_);
    return made_;
  }
  void set_made(uint64_t id, std::shared_ptr<const Routing> routing) {
    std::lock_guard<std::mutex> lock(mu_);
    made_ = Made{id, std::move(routing)};
  }

 private:
  mutable std::mutex mu_;
  Made made_;
};

// The staging blocks of a plan's foreign buffers (fabric/staging.h), kept from call to call: a
// block is refilled only after the call that filled it completed (every peer done reading), and
// repeated calls fault its pages in once instead of every time.
struct Staging {
  StagedBlock x, scales, topk, weights, expert_out;
};

enum class Kind { kCreate, kDispatch, kCombine };

struct Call {
  Kind kind = Kind::kCreate;
  std::shared_ptr<const Plan> plan;
  std::shared_ptr<Handle> handle;    // dispatch: filled (or reused); combine: followed
  std::shared_ptr<Staging> staging;  // the plan's
  bool reuse = false;                // dispatch with the routing of `handle`
  // Why this rank's call was refused for its arguments (sclSuccess: it was not). A refused call
  // still takes its turn, publishing only that (no buffer, no handle of the caller's), so that
  // the others fail the same call, naming this rank, rather than pair it with its next one.
  sclResult_t refused = sclSuccess;
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
