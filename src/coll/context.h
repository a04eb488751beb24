// What an algorithm needs to run: this rank's view of the communicator's peers (their heaps and
// control blocks), the step sequence, the waiter and the staging area. The Communicator owns it;
// the algorithms are free functions over it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "core/status.h"
#include "fabric/registration_cache.h"
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
  uint32_t seq = 0;                   // sequence number of the last step begun
  std::vector<uint32_t> tiles_done;   // per rank: tiles announced over the communicator's life
  std::vector<CallDesc> descs;        // the peers' descriptors of the current step
  std::vector<const void*> payloads;  // the peers' payloads of the current eager step
  uint64_t call_index = 0;            // user-visible call counter, for messages
  const char* call_name = "";
  // Staging for foreign buffers, in our own heap; round_bytes is the smallest staging area of
  // all ranks, so every rank cuts calls into the same rounds.
  char* staging = nullptr;
  uint64_t staging_bytes = 0;
  uint64_t round_bytes = 0;
  // sclCommRegister'd foreign buffers, which peers read with process_vm_readv instead of staging.
  const RegistrationCache* registrations = nullptr;
  // Algorithm choices every rank must make alike (checked to agree at init).
  size_t eager_max_bytes = 0;       // STRATACL_EAGER_MAX_BYTES
  int64_t oneshot_forced_max = -1;  // STRATACL_ONESHOT_MAX_BYTES

  mutable CmaVerdict cma = kCmaUnknown;  // every rank's verdict, once known (see cma_usable)

  ControlBlock* me() const { return peers[size_t(rank)].cb; }
  char* my_base() const { return peers[size_t(rank)].base; }
  uint64_t ref_of(const void* p) const { return uint64_t(static_cast<const char*>(p) - my_base()); }
  // A peer's published buffer, bounds-checked against the peer's heap: a corrupt or hostile
  // descriptor must never make us touch memory outside that mapping.
  Result<const char*> peer_ptr(int peer, uint64_t ref, uint64_t bytes) const;
  // Block `block` of a peer's published input (send_ref + block * send_stride), overflow-safe.
  // Mapped (heap or staged) inputs only: a registered input must be read with read_block.
  Result<const char*> peer_block(int peer, const CallDesc& d, size_t block, uint64_t bytes) const;
  // Copies bytes [offset, offset + bytes) of block `block` of a peer's published input into
  // `dst`: a memcpy from the peer's mapped heap (with non-temporal stores if `stream`), or one
  // process_vm_readv of its registered buffer.
  Status read_block(int peer, const CallDesc& d, size_t block, uint64_t offset, uint64_t bytes,
                    char* dst, bool stream = false) const;
  // True once every rank has verified it can read its peers with process_vm_readv, so
  // registered buffers may be published for such reads. Until every rank has decided, calls
  // stage; a refusal is logged once and registered buffers stage from then on.
  bool cma_usable() const;
  Deadline deadline() const { return Deadline::after_ms(timeout_ms); }
  std::string where() const;  // "allreduce #12 (step 40)"
};

}  // namespace stratacl
