// The step protocol every collective runs (invariants: docs/DESIGN.md, "Synchronisation"):
//  1. Publish before waiting: the descriptor is written, then the step number (release).
//  2. Everyone checks everything: each rank compares every peer's signature with its own.
//  3. No overwrite before acknowledgement: every step, including one that failed a check, ends
//     with the done-count, so the next descriptor cannot race with a reader of this one. (A
//     successful eager step needs none: its double-buffered slots are acknowledged by the next
//     step's arrival; see coll/eager.h.)
//  4. Failure revokes: only a timeout, an abort or a dead peer skips the done-count, and the
//     caller then revokes the communicator.
//  5. Every wait has the deadline, abort and peer-death exits (see Waiter), and one deadline
//     serves the whole call (CollContext::deadline).
// Step numbers never take the value kNoStep (sync/flag.h), which is what unwritten lines hold.
#pragma once

#include <utility>
#include <vector>

#include "coll/context.h"

namespace stratacl {

// Starts the next step and publishes `mine` (invariant 1).
void step_publish(CollContext& c, const CallDesc& mine);

// Waits until every peer signalled arrival at this step (invariant 5's exits included).
Status step_wait_arrivals(CollContext& c);

// The sclInvalidUsage error of a signature mismatch with `peer`, showing both calls.
Status step_mismatch(const CollContext& c, const CallSig& mine, int peer, const CallSig& theirs);

// The signature of the newest call rank `p` published, normal (descriptor) or eager (slot).
CallSig latest_sig(const CollContext& c, int p);

// Waits until every peer published this step; copies their descriptors into `descs` (a private
// snapshot: later reads cannot change under us) and compares signatures (invariant 2). A
// mismatch is returned in *usage and the step must still be finished; a returned error is fatal.
Status step_gather(CollContext& c, std::vector<CallDesc>* descs, Status* usage);

// Pipelining inside a step: a rank announces each tile it finished (progress counts tiles over
// the communicator's life), and a reader waits for the tile it needs. Every rank derives every
// peer's tile count from the same partition, so `tiles_done` stays in step without messages.
void step_tile_done(CollContext& c);
Status step_wait_tile(CollContext& c, int peer, uint32_t tile);
bool step_tile_ready(const CollContext& c, int peer, uint32_t tile);
void step_tiles_finished(CollContext& c, const std::vector<uint32_t>& tiles_per_rank);

// Ends the step: publishes our result, waits for every peer's (invariant 3), and returns the
// first error any rank reported, so all ranks return the same verdict.
Status step_finish(CollContext& c, const Status& local);

// True for errors after which the communicator must be revoked (invariant 4).
inline bool is_fatal(const Status& s) {
  return s.code() == sclTimeout || s.code() == sclRemoteError || s.code() == sclSystemError ||
         s.code() == sclInternalError;
}

// A result code a peer published: anything outside the enum is itself a remote error.
sclResult_t peer_result(int32_t code);

// Runs a whole step whose only work is `body` between gather and finish.
template <typename Body>
Status run_step(CollContext& c, const CallDesc& mine, Body&& body) {
  step_publish(c, mine);
  std::vector<CallDesc>& descs = c.descs;  // reused: no allocation per call
  Status usage;
  SCL_TRY(step_gather(c, &descs, &usage));
  Status local = usage.ok() ? body(std::as_const(descs)) : usage;
  if (is_fatal(local)) return local;  // invariant 4: the caller revokes; no done-count
  return step_finish(c, local);
}

}  // namespace stratacl
