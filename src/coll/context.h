// What an algorithm needs to run: this rank's view of the communicator's peers (their heaps and
// control blocks), the step sequence, the waiter and the staging area. The Communicator owns it;
// the algorithms are free functions over it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "core/status.h"
#include "sync/control_block.h"
#include "sync/waiter.h"

namespace stratacl {

struct PeerView {
  char* base = nullptr;  // the peer's heap, mapped here
  uint64_t bytes = 0;
  ControlBlock* cb = nullptr;
  uint64_t cb_instance = 0;  // the block's identity when we joined (see ControlBlock::instance)
  int pid = 0;
};

struct CollContext {
  int rank = 0, nranks = 0;
  std::vector<PeerView> peers;
  Waiter* waiter = nullptr;
  int64_t timeout_ms = 0;
  uint32_t seq = 0;                  // sequence number of the last step begun
  std::vector<uint32_t> tiles_done;  // per rank: tiles announced over the communicator's life
  uint64_t call_index = 0;           // user-visible call counter, for messages
  const char* call_name = "";
  // Staging for foreign buffers, in our own heap; round_bytes is the smallest staging area of
  // all ranks, so every rank cuts calls into the same rounds.
  char* staging = nullptr;
  uint64_t staging_bytes = 0;
  uint64_t round_bytes = 0;

  ControlBlock* me() const { return peers[size_t(rank)].cb; }
  char* my_base() const { return peers[size_t(rank)].base; }
  uint64_t ref_of(const void* p) const { return uint64_t(static_cast<const char*>(p) - my_base()); }
  // A peer's published buffer, bounds-checked against the peer's heap: a corrupt or hostile
  // descriptor must never make us touch memory outside that mapping.
  Result<const char*> peer_ptr(int peer, uint64_t ref, uint64_t bytes) const;
  // Block `block` of a peer's published input (send_ref + block * send_stride), overflow-safe.
  Result<const char*> peer_block(int peer, const CallDesc& d, size_t block, uint64_t bytes) const;
  Deadline deadline() const { return Deadline::after_ms(timeout_ms); }
  std::string where() const;  // "allreduce #12 (step 40)"
};

}  // namespace stratacl
