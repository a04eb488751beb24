// Point-to-point send/receive. Each ordered pair of ranks has a channel in the sender's control
// block: a ring of kP2PSlots descriptors and a `posted` counter. The receiver reads the sender's
// buffer directly (single copy), then acknowledges in its own block: a counter, and the result of
// each slot. The sender returns only after the acknowledgement (zero-copy safety).
#pragma once

#include <atomic>
#include <span>
#include <vector>

#include "coll/context.h"

namespace stratacl {

constexpr int kP2PSlots = 8;

// Sender side, one per peer: the sends posted to that peer so far, and their descriptors.
struct P2PSlot {
  uint64_t count;
  int32_t dtype;  // kRefusedSend: the send was refused for its arguments (no buffer)
  int32_t reserved;
  RemoteRef ref;
};
constexpr int32_t kRefusedSend = -1;
struct P2PChannel {
  Flag posted;
  P2PSlot slots[kP2PSlots];
};

// Receiver side, one per peer: the receives completed from that peer so far, and the result of
// each slot's (a mismatch is reported to the sender there; one per slot, so two sends
// acknowledged at once keep their own results).
struct P2PAck {
  Flag acked;
  std::atomic<int32_t> status[kP2PSlots];
};

// The peer of a receive from whichever rank's send comes first (sclRecvAny).
constexpr int kAnySource = -1;

struct P2POp {
  bool is_send = true;
  int peer = 0;  // kAnySource: any rank, whose number then goes to *source
  int* source = nullptr;
  LocalBuffer send;
  char* recv = nullptr;
  size_t count = 0;
  sclDataType_t dtype = sclUint8;
  // Refused on this rank for its arguments (why; sclSuccess: not refused). It still pairs with
  // its peer's op, carrying nothing: a refused send posts a slot its receiver fails on, a
  // refused receive acknowledges its sender's slot with sclInvalidArgument, read as "refused".
  // So the peer fails the same op instead of pairing it with this rank's next one.
  sclResult_t refused = sclSuccess;
};

// Per-communicator counters: sends posted to, and receives completed from, each peer.
struct P2PState {
  std::vector<uint32_t> posted, received;
  explicit P2PState(int nranks = 0) : posted(size_t(nranks)), received(size_t(nranks)) {}
};

// Runs a batch (a group, or one op) and never deadlocks on ordering inside the batch: it makes
// progress on whichever send, receive or acknowledgement is ready. A receive from kAnySource
// takes the first send to us not yet received, looking at the ranks in turn (the lowest first
// when several are ready); it must be the batch's only receive.
Status run_p2p(CollContext& c, P2PState& st, std::span<const P2POp> ops);

}  // namespace stratacl
