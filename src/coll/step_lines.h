// What the step protocol publishes in each rank's control block (a region, sync/region.h): the
// descriptor of the current step, and two eager slots for payload-in-flag steps.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "fabric/remote_ref.h"

namespace stratacl {

// The signature of a call: every rank compares every peer's to its own, so mismatched calls
// become sclInvalidUsage on all ranks instead of corruption.
struct CallSig {
  uint32_t coll = 0;
  int32_t dtype = 0;
  int32_t op = 0;
  int32_t root = 0;
  uint64_t count = 0;
  uint64_t round_bytes = 0;  // chunking unit; differs only if ranks were configured differently
  uint32_t runs = 1;         // Call::runs
  bool operator==(const CallSig&) const = default;
};

// CallSig::runs of a call refused on its rank for its arguments (run_refused(), coll/algorithms.h):
// no call's signature has it, so every peer's call fails at that step.
constexpr uint32_t kRefusedRuns = ~uint32_t(0);
// Signs `sig` as a call refused for `why` (an sclResult_t), which step_mismatch() reads back.
inline void sign_refused(CallSig& sig, int32_t why) {
  sig.op = why;
  sig.runs = kRefusedRuns;
}

// What a rank publishes for one step: its signature and the buffers its peers may read.
struct alignas(64) CallDesc {
  CallSig sig;
  RemoteRef send;      // the input peers read
  RemoteRef out;       // the output peers read (two-shot allreduce shards)
  uint32_t seq = 0;    // the step this descriptor belongs to (set by step_publish)
  uint32_t flags = 0;  // kDescInPlace: the rank's call is in place (allreduce negotiates on it)
};
constexpr uint32_t kDescInPlace = 1;

// Payload-in-flag ("eager") steps for small calls: the owner copies its input into slot
// seq % 2, tagged with the step number and signature, before signalling arrival (coll/eager.h).
constexpr size_t kEagerBytes = 4096;
// The header is packed so that the first 40 bytes of the payload share its cache line: a peer
// that polls `seq` gets a small payload in the same transfer.
struct alignas(64) EagerSlot {
  std::atomic<uint32_t> seq{0};  // the step of this slot's payload (release-stored last); 0 never
  int32_t root = 0;
  uint64_t count = 0;
  uint8_t coll = 0, dtype = 0, op = 0;  // the API's enums, all below 256
  uint32_t runs = 1;
  alignas(8) char payload[kEagerBytes];

  void set_sig(const CallSig& s) {
    root = s.root, count = s.count;
    coll = uint8_t(s.coll), dtype = uint8_t(s.dtype), op = uint8_t(s.op);
    runs = s.runs;
  }
  // The signature; round_bytes, which only cuts normal steps into rounds, is the reader's.
  CallSig sig(uint64_t round_bytes) const {
    return CallSig{coll, dtype, op, root, count, round_bytes, runs};
  }
};
static_assert(offsetof(EagerSlot, payload) == 24);

struct StepLines {
  CallDesc desc;
  EagerSlot eager[2];
};

}  // namespace stratacl
