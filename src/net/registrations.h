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

  // `local_required`: the provider needs a descriptor for every buffer (FI_MR_LOCAL); `ep`:
  // bind registrations to it (FI_MR_ENDPOINT), or null.
  Registrations(fid_domain* domain, fid_ep* ep, bool local_required)
      : domain_(domain), ep_(ep), local_required_(local_required) {}
  ~Registrations();
  Registrations(const Registrations&) = delete;
  Registrations& operator=(const Registrations&) = delete;

  // The descriptor to pass with a transfer of [p, p + bytes): nullptr when none is needed.
  Result<void*> desc(const void* p, size_t bytes);
  // Releases the batch's temporary registrations (foreign memory).
  void end_batch();

  // For tests and scl-info: registrations of heap chunk ranges held now.
  size_t heap_registrations() const { return heap_.size(); }

 private:
  Result<fid_mr*> reg(const void* p, size_t bytes);
  struct Held {
    fid_mr* mr;
    uint64_t punches;  // the heap's punch count when it was made
  };
  fid_domain* domain_;
  fid_ep* ep_;
  bool local_required_;
  std::map<std::pair<uint64_t, uint64_t>, Held> heap_;  // [first, last] chunk -> registration
  std::vector<fid_mr*> temporary_;
  uint64_t next_key_ = 0;
};

}  // namespace stratacl::net
