// Per-communicator, per-rank control block. It lives in the owning rank's heap, so every local
// peer reads it through its mapping; each line is written only by its owner (the `sleepers`
// counters excepted: waiters announce themselves there so writers know to wake them).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace stratacl {

// One cache line holding a monotonically increasing sequence value (a futex word).
struct alignas(64) Flag {
  std::atomic<uint32_t> value{0};
  std::atomic<uint32_t> sleepers{0};  // waiters blocked in futex_wait on `value`
  std::atomic<int32_t> status{0};     // sclResult_t that goes with `value` (done lines)
};
static_assert(sizeof(Flag) == 64);

// The signature of a call: every rank compares every peer's to its own, so mismatched calls
// become sclInvalidUsage on all ranks instead of corruption.
struct CallSig {
  uint32_t coll = 0;
  int32_t dtype = 0;
  int32_t op = 0;
  int32_t root = 0;
  uint64_t count = 0;
  uint64_t round_bytes = 0;  // chunking unit; differs only if ranks were configured differently
  bool operator==(const CallSig&) const = default;
};

constexpr uint64_t kNoRef = ~uint64_t(0);

enum CmaVerdict : uint32_t { kCmaUnknown = 0, kCmaOk = 1, kCmaRefused = 2 };

// Why a rank's `revoked` word is set.
enum Revocation : uint32_t { kNotRevoked = 0, kAborted = 1, kFailed = 2, kDeparted = 3 };

// What a rank publishes for one step: its signature and the heap offsets of the buffers its
// peers may read. Offsets are into the publishing rank's own heap.
struct alignas(64) CallDesc {
  CallSig sig;
  uint64_t send_ref = kNoRef;  // input peers read: block b starts at send_ref + b * send_stride
  uint64_t send_stride = 0;
  uint64_t out_ref = kNoRef;  // output peers read (two-shot allreduce shards)
  // Non-zero: the input is a registered foreign buffer at this address in the publisher's
  // address space, read with process_vm_readv (fabric/cma.h); send_ref is then unused.
  uint64_t send_va = 0;
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
  std::atomic<uint32_t> seq{0};  // the step this slot's payload belongs to (release-stored last)
  int32_t root = 0;
  uint64_t count = 0;
  uint8_t coll = 0, dtype = 0, op = 0;  // the API's enums, all below 256
  alignas(8) char payload[kEagerBytes];

  void set_sig(const CallSig& s) {
    root = s.root, count = s.count;
    coll = uint8_t(s.coll), dtype = uint8_t(s.dtype), op = uint8_t(s.op);
  }
  // The signature; round_bytes, which only cuts normal steps into rounds, is the reader's.
  CallSig sig(uint64_t round_bytes) const {
    return CallSig{coll, dtype, op, root, count, round_bytes};
  }
};
static_assert(offsetof(EagerSlot, payload) == 24);

// Point-to-point channel from the owner to one peer: a ring of descriptors.
constexpr int kP2PSlots = 8;
struct P2PSlot {
  uint64_t count;
  int32_t dtype;
  int32_t pad;
  uint64_t ref;
};
struct alignas(64) P2PChannel {
  Flag posted;  // number of sends posted to this peer
  P2PSlot slots[kP2PSlots];
};

struct ControlBlock {
  Flag arrive;    // seq of the step whose descriptor is published
  Flag progress;  // tiles this rank has finished, counted over the communicator's life
  Flag done;      // seq of the last step whose buffers peers have stopped using; status = result
  Flag depart;    // 1 once this rank is destroying the communicator
  // Random identity of this block, scrubbed to 0 before the block is freed. A peer that finds a
  // different value knows the owner has left and the memory may hold anything now.
  std::atomic<uint64_t> instance{0};
  // This block's address in its owner's address space, and the owner's verdict on reading every
  // peer with process_vm_readv. Registered buffers are published for such reads only once every
  // rank said yes.
  uint64_t self_va = 0;
  std::atomic<uint32_t> cma{0};  // CmaVerdict; a refusal carries its errno in bits 8 and up
  // The owner's settings that every rank must share (compared at init).
  uint32_t eager_max_bytes = 0;
  int64_t oneshot_forced_max = -1;
  alignas(64) std::atomic<uint32_t> revoked{0};  // non-zero: see Revocation
  std::atomic<int32_t> culprit{-1};              // the rank whose failure caused it, if known
  alignas(64) CallDesc desc;
  EagerSlot eager[2];
  // Followed in memory by: P2PChannel send[nranks]; Flag recv_ack[nranks];
  // uint64_t vec[4*nranks+8].
};

// Byte layout of a control block for `nranks` ranks.
struct CbLayout {
  size_t channels, acks, vec, total;
  static CbLayout of(int nranks) {
    CbLayout l;
    l.channels = (sizeof(ControlBlock) + 63) / 64 * 64;
    l.acks = l.channels + sizeof(P2PChannel) * size_t(nranks);
    l.vec = l.acks + sizeof(Flag) * size_t(nranks);
    l.total = l.vec + sizeof(uint64_t) * (4 * size_t(nranks) + 8);
    return l;
  }
};

inline P2PChannel* channels(ControlBlock* cb, int nranks) {
  return reinterpret_cast<P2PChannel*>(reinterpret_cast<char*>(cb) + CbLayout::of(nranks).channels);
}
inline Flag* recv_acks(ControlBlock* cb, int nranks) {
  return reinterpret_cast<Flag*>(reinterpret_cast<char*>(cb) + CbLayout::of(nranks).acks);
}
// Small per-rank vector area: alltoallv counts/displacements, split colours.
inline uint64_t* vec_area(ControlBlock* cb, int nranks) {
  return reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(cb) + CbLayout::of(nranks).vec);
}

// `a` has reached `b` in wrap-around sequence arithmetic.
inline bool seq_reached(uint32_t a, uint32_t b) { return int32_t(a - b) >= 0; }

}  // namespace stratacl
