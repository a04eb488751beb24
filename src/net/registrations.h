// Registration-on-allocation across the network: memory registered with the endpoint's domain
// once, not per call.
//  - Heap memory (sclMemAlloc, the torch allocator's tensors) is registered in 64 MiB chunks of
//    the heap, a range of chunks the first time a transfer touches it, and kept: later calls on
//    any buffer there find the registration ready. Chunks keep a sparse heap from ever being
//    pinned whole (verbs pins what it registers). When the heap gives a freed range back to the
//    kernel (a hole punched: new pages on the next touch), registrations made before are dropped
//    and made again on next use, so a pinned page can never be a stale one.
//  - Foreign memory needs no registration where the provider does not demand it (tcp); where it
//    does (FI_MR_LOCAL: verbs), it is registered for the batch and released after it: the
//    buffer-centric cost, paid only by buffers not on the heap.
//  - Where the endpoint writes one-sided (net/one_sided.cc), remote() gives the key and address
//    a peer writes a receive buffer with: a window registered for exactly that buffer and closed
//    when the batch ends, so a key reaches nothing else and outlives its transfer by nothing.
//    Kept registrations never allow remote access. A window costs a registration per one-sided
//    receive (over tcp a few microseconds; docs/PERFORMANCE.md), the price of a key that a
//    stranger who reads it off the wire cannot use anywhere else, or later.
#pragma once

#include <rdma/fi_domain.h>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "core/status.h"

namespace stratacl::net {

class Registrations {
 public:
  static constexpr uint64_t kChunkBytes = uint64_t(64) << 20;

  // `mr_mode`: the provider's bits (FI_MR_LOCAL: every buffer needs a descriptor; VIRT_ADDR:
  // peers address registered memory by its virtual address, else by the offset in the
  // registration); `ep`: bind registrations to it (FI_MR_ENDPOINT), or null; `remote`: the endpoint
  // may write one-sided (remote() windows); `key_size`: the provider's key size in bytes.
  Registrations(fid_domain* domain, fid_ep* ep, int mr_mode, size_t key_size, bool remote)
      : domain_(domain), ep_(ep), mr_mode_(mr_mode), key_size_(key_size), remote_(remote) {}
  ~Registrations();
  Registrations(const Registrations&) = delete;
  Registrations& operator=(const Registrations&) = delete;

  // The descriptor to pass with a transfer of [p, p + bytes): nullptr when none is needed.
  Result<void*> desc(const void* p, size_t bytes);
  // What a peer writes [p, p + bytes) with (only where constructed `remote`): valid until the
  // batch ends.
  struct Remote {
    uint64_t addr, key;
  };
  Result<Remote> remote(const void* p, size_t bytes);
  // Releases the batch's temporary registrations (foreign memory, and stale heap ones).
  void end_batch();
  // Closes every registration, which revokes every key a peer was given; the ones needed later
  // are made again.
  void close_all();

  // For tests and scl-info: registrations of heap chunk ranges held now.
  size_t heap_registrations() const { return heap_.size(); }

 private:
  Result<fid_mr*> reg(const void* p, size_t bytes, uint64_t access);
  // What kept and per-batch descriptors allow: local sends, receives and (one-sided) writes.
  uint64_t local_access() const { return FI_SEND | FI_RECV | (remote_ ? FI_WRITE : 0); }
  // The registration covering [p, p + bytes) and where it starts: the heap's, kept; else one for
  // the batch if `needed`; else none (a null mr).
  struct Region {
    fid_mr* mr;
    const char* start;
  };
  Result<Region> region(const void* p, size_t bytes, bool needed);
  struct Held {
    fid_mr* mr;
    uint64_t punches;  // the heap's punch count when it was made
  };
  fid_domain* domain_;
  fid_ep* ep_;
  int mr_mode_;
  size_t key_size_;
  bool remote_;
  std::map<std::pair<uint64_t, uint64_t>, Held> heap_;  // [first, last] chunk -> registration
  std::vector<fid_mr*> temporary_;
};

}  // namespace stratacl::net
