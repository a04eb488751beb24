// Eager (payload-in-flag) steps for small calls. Each rank copies its input into slot seq % 2 of
// its control block, tagged with the step number and the call's signature, then signals arrival;
// peers read the payloads straight from the slots once they see it. That is one round instead of
// the step protocol's two, for one small copy, and it serves foreign buffers without staging.
//
// No done-count is needed: a rank rewrites the slot of step s only two steps later (step numbers
// alternate parity, even where they wrap: sync/flag.h), which it starts after seeing every peer
// arrive at the step between, and a peer arrives there only after it finished reading step s. A
// mismatch (another signature, or a peer in a normal step, whose slot tag is stale) ends with the
// done-count like a normal step, so ranks in either kind of step return together.
#pragma once

#include <vector>

#include "coll/call.h"
#include "coll/context.h"
#include "coll/step.h"

namespace stratacl {

// True when a per-rank payload of `bytes` goes eager (the same answer on every rank: the
// threshold is checked to agree at init).
bool eager_fits(const CollContext& c, size_t bytes);

// What one rank contributes: `nblocks` blocks of `block_bytes`, block b at src + b * stride.
// Eager steps copy it into the slot whatever its memory kind: no staging, no zero-copy.
struct EagerInput {
  const char* src = nullptr;
  size_t stride = 0;
  int nblocks = 0;
  size_t block_bytes = 0;
};

// Publishes `in`, waits for every peer and checks signatures. On success (*usage ok),
// (*payloads)[p] is rank p's payload, blocks packed back to back.
Status eager_exchange(CollContext& c, const Call& call, const EagerInput& in,
                      std::vector<const void*>* payloads, Status* usage);

// Byte `offset` of a payload.
inline const char* payload_at(const void* payload, size_t offset) {
  return static_cast<const char*>(payload) + offset;
}

// One eager step: body(payloads) runs once every rank's payload is readable.
template <typename Body>
Status run_eager_step(CollContext& c, const Call& call, const EagerInput& in, Body&& body) {
  std::vector<const void*>& payloads = c.payloads;
  Status usage;
  SCL_TRY(eager_exchange(c, call, in, &payloads, &usage));
  if (!usage.ok()) return step_finish(c, usage);
  body(static_cast<const std::vector<const void*>&>(payloads));
  return Status::Ok();
}

}  // namespace stratacl
