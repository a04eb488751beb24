// Mappings of local peers' heaps. Each peer heap is mapped once per process, however many
// communicators share that peer, and unmapped when the last of them is destroyed.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace stratacl {

class PeerHeapRef {
 public:
  PeerHeapRef() = default;
  PeerHeapRef(PeerHeapRef&& o) noexcept;
  PeerHeapRef& operator=(PeerHeapRef&& o) noexcept;
  PeerHeapRef(const PeerHeapRef&) = delete;
  PeerHeapRef& operator=(const PeerHeapRef&) = delete;
  ~PeerHeapRef();

  char* base() const { return base_; }
  uint64_t size() const { return size_; }
  uint64_t nonce() const { return nonce_; }

  // Maps `fd` (a peer's heap memfd, `size` bytes) unless a mapping of heap `nonce` exists.
  // The fd is only read; the caller keeps ownership of it.
  static Result<PeerHeapRef> acquire(uint64_t nonce, int fd, uint64_t size);
  // Another reference to a heap that is already mapped (used by sclCommSplit).
  static Result<PeerHeapRef> share(uint64_t nonce);
  // Our own heap, for uniform addressing of self.
  static PeerHeapRef self(char* base, uint64_t size, uint64_t nonce);

 private:
  PeerHeapRef(char* base, uint64_t size, uint64_t nonce, bool counted)
      : base_(base), size_(size), nonce_(nonce), counted_(counted) {}
  void reset();

  char* base_ = nullptr;
  uint64_t size_ = 0;
  uint64_t nonce_ = 0;
  bool counted_ = false;  // false for self and for moved-from objects
};

// Number of peer heaps mapped now (for leak checks and scl-info).
int mapped_peer_heaps();

}  // namespace stratacl
