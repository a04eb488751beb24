// Where a validated call goes: run now (NULL stream), queue on a stream, or wait in the open
// group until sclGroupEnd. Every call takes its communicator's ticket when it is issued, here, so
// calls on a communicator run in issue order whatever their streams (comm/call_order.h).
#pragma once

#include <vector>

#include "coll/call.h"
#include "coll/p2p.h"
#include "comm/communicator.h"

namespace stratacl::api {

// A call that owns its alltoallv arrays, so it can outlive the caller's stack.
struct OwnedCall {
  Call call;
  std::vector<size_t> arrays[4];
  OwnedCall() = default;
  explicit OwnedCall(const Call& c, int nranks);
  OwnedCall(const OwnedCall& o) : OwnedCall(o.call, int(o.arrays[0].size())) {}
  OwnedCall& operator=(const OwnedCall&) = delete;
};

sclResult_t submit(Communicator* c, sclStream_t stream, const Call& call);
sclResult_t submit(Communicator* c, sclStream_t stream, const P2POp& op);
// MoE calls are never grouped (sclInvalidUsage inside a group).
sclResult_t submit(Communicator* c, sclStream_t stream, const moe::Call& call);

sclResult_t group_start();
sclResult_t group_end();
// A call's error before it was submitted (its arguments): reported, and inside a group kept for
// sclGroupEnd, which then runs none of the group.
sclResult_t refuse(Communicator* c, Status s);
// A collective's, send's or receive's error before it was submitted: reported, and the call
// still takes its turn, refused (Call::refused: a step that fails on every rank; P2POp::refused:
// an op that pairs with its peer's and fails it), so that peers whose own calls passed fail the
// same call rather than pair it with this rank's next one. Its turn waits for its peers as the
// call would have; where that turn ends the communicator (a partner that never comes), the
// caller gets that error instead. Inside a group it is kept as refuse() keeps it, and
// sclGroupEnd takes the group's turns so.
sclResult_t refuse_taking_part(Communicator* c, sclStream_t stream, Coll coll, Status s);
// What the caller of a refused call hears once the refusal took its turn (`turn`, submit()'s
// result): that turn's error where it ended the communicator (a partner that never came, a
// peer that died), else the refusal `why`.
sclResult_t after_turn(Communicator* c, sclResult_t turn, Status why);
sclResult_t refuse_taking_part(Communicator* c, sclStream_t stream, const P2POp& op, Status s);

}  // namespace stratacl::api
