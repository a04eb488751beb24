// Mappings of local peers' heaps: a peer's data heap read-only (PROT_READ: pull-only algorithms
// only read peers' memory), its doorbell heap read-write (the sleeper counts we may bump). A
// peer's pair is mapped once per process, however many communicators share that peer, and
// unmapped when the last of them is destroyed. A received fd is mapped only if it is a memfd
// sealed against shrinking and growing, at least as large as announced.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace stratacl {

struct PeerHeapFds {
  int data = -1, doorbells = -1;  // owned by the caller; only read here
  uint64_t data_bytes = 0, doorbell_bytes = 0;
};

class PeerHeapRef {
 public:
  PeerHeapRef() = default;
  PeerHeapRef(PeerHeapRef&& o) noexcept;
  PeerHeapRef& operator=(PeerHeapRef&& o) noexcept;
  PeerHeapRef(const PeerHeapRef&) = delete;
  PeerHeapRef& operator=(const PeerHeapRef&) = delete;
  ~PeerHeapRef();

  const char* data() const { return data_; }
  uint64_t data_bytes() const { return data_bytes_; }
  char* doorbells() const { return doorbells_; }
  uint64_t doorbell_bytes() const { return doorbell_bytes_; }
  uint64_t nonce() const { return nonce_; }

  // Maps the peer's heaps unless heap `nonce` is mapped already.
  static Result<PeerHeapRef> acquire(uint64_t nonce, const PeerHeapFds& fds);
  // Another reference to heaps that are already mapped (used by sclCommSplit).
  static Result<PeerHeapRef> share(uint64_t nonce);
  // Our own heaps, for uniform addressing of self.
  static Result<PeerHeapRef> self();

 private:
  static PeerHeapRef share_locked(uint64_t nonce);
  void reset();

  const char* data_ = nullptr;
  char* doorbells_ = nullptr;
  uint64_t data_bytes_ = 0, doorbell_bytes_ = 0;
  uint64_t nonce_ = 0;
  bool counted_ = false;  // false for self and for moved-from objects
};

// Number of peer heaps mapped now (for leak checks and scl-info).
int mapped_peer_heaps();

}  // namespace stratacl
