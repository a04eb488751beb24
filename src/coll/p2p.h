// Point-to-point send/receive. Each ordered pair of ranks has a channel in the sender's control
// block: a ring of kP2PSlots descriptors and a `posted` counter; the receiver acknowledges in its
// own block, with a status, once it has copied the data. The receiver reads the sender's buffer
// directly (single copy); the sender returns only after the acknowledgement (zero-copy safety).
#pragma once

#include <span>
#include <vector>

#include "coll/context.h"

namespace stratacl {

struct P2POp {
  bool is_send = true;
  int peer = 0;
  const char* send = nullptr;
  char* recv = nullptr;
  size_t count = 0;
  sclDataType_t dtype = sclUint8;
};

// Per-communicator counters: sends posted to, and receives completed from, each peer.
struct P2PState {
  std::vector<uint32_t> posted, received;
  explicit P2PState(int nranks = 0) : posted(size_t(nranks)), received(size_t(nranks)) {}
};

// Runs a batch (a group, or one op) and never deadlocks on ordering inside the batch: it makes
// progress on whichever send, receive or acknowledgement is ready.
Status run_p2p(CollContext& c, P2PState& st, std::span<const P2POp> ops);

}  // namespace stratacl
