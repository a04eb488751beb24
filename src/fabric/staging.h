// Publishing our buffers for peers, and the one staging mechanism. Peers reach only our data heap,
// and ranges registered with sclCommRegister once every rank can read them with process_vm_readv;
// anything else is copied into our heap first: the buffer-centric baseline. Two places take
// staged data: the communicator's staging area, for calls cut into rounds that fit it (every
// collective but alltoallv), and a heap block of the call's own (StagedBlock), for what cannot be
// cut: alltoallv's uneven blocks, and sends, whose data must stay until the receiver copied it.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "core/status.h"
#include "exec/executor.h"
#include "fabric/cma_agreement.h"
#include "fabric/heap.h"
#include "fabric/memory_kind.h"
#include "fabric/remote_ref.h"

namespace stratacl {

// What a rank gives its peers to read: `nblocks` blocks of `block_bytes`, block b at
// src.ptr + b * stride.
struct Outgoing {
  LocalBuffer src;
  size_t stride = 0;
  int nblocks = 1;
  size_t block_bytes = 0;
  size_t extent() const { return nblocks > 0 ? (size_t(nblocks) - 1) * stride + block_bytes : 0; }
  size_t staged_bytes() const { return size_t(nblocks) * block_bytes; }
};

// A heap block holding staged data for as long as peers may read it. Freed when dropped; after a
// fatal error the communicator quarantines it instead (Quarantine below).
class StagedBlock {
 public:
  StagedBlock() = default;
  StagedBlock(StagedBlock&& o) noexcept
      : heap_(o.heap_), ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  StagedBlock& operator=(StagedBlock&& o) noexcept;
  StagedBlock(const StagedBlock&) = delete;
  StagedBlock& operator=(const StagedBlock&) = delete;
  ~StagedBlock() { reset(); }

  static Result<StagedBlock> allocate(Heap* heap, size_t bytes);
  char* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  explicit operator bool() const { return ptr_ != nullptr; }
  void reset();
  void leak() {  // forgets the block without freeing it
    ptr_ = nullptr;
    bytes_ = 0;
  }

 private:
  Heap* heap_ = nullptr;
  char* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Staged blocks that a failed call could not prove unread: a peer may still be copying out of
// them. They are freed only after the communicator's departure barrier, when no peer can read
// them any more, or leaked when that barrier ran out of time. Thread-safe.
class Quarantine {
 public:
  void keep(StagedBlock block);
  void release_all();  // after a complete departure barrier
  void leak_all();     // after an incomplete one: leaking beats a peer reading reused memory
  ~Quarantine() { leak_all(); }

 private:
  std::mutex mu_;
  std::vector<StagedBlock> blocks_;
};

class Stager {
 public:
  Stager() = default;
  // `area`: the communicator's staging area (calls are cut into rounds that fit it). Staging
  // copies run on `exec` (its workers or engines).
  Stager(Heap* heap, char* area, const CmaAgreement* cma, Executor* exec)
      : heap_(heap), area_(area), cma_(cma), exec_(exec) {}

  // Publishes `out`; foreign data is copied into the staging area at `area_offset` (the caller
  // cut its call into rounds so that it fits).
  RemoteRef publish(const Outgoing& out, size_t area_offset) const;
  // Publishes `out`; foreign data is copied into *block: reused when it is at least that large (a
  // caller that keeps its block from call to call pays its page faults once) and not four times
  // larger, else replaced by a new heap block.
  Result<RemoteRef> publish_own(const Outgoing& out, StagedBlock* block) const;

  // Publishes the blocks of `out` of which only a prefix is read, `used[b]` bytes of block b: in
  // place as publish_own does (block b at out.stride), or, for foreign data, only the prefixes,
  // packed back to back into *block (reused as publish_own reuses it). *packed says which, for
  // the readers' addressing: packed, block b's bytes start at the sum of used[] before b.
  Result<RemoteRef> publish_prefixes(const Outgoing& out, const std::vector<size_t>& used,
                                     StagedBlock* block, bool* packed) const;
  char* area() const { return area_; }
  const Heap& heap() const { return *heap_; }
  bool cma_usable() const { return cma_ && cma_->usable(); }

 private:
  // The reference peers use when `out` needs no staging; kind kNone when it does.
  RemoteRef in_place(const Outgoing& out) const;
  RemoteRef stage(const Outgoing& out, char* dst) const;
  Status fit(StagedBlock* block, size_t bytes) const;  // a kept block, sized for `bytes`
  void copy(char* dst, const char* src, size_t bytes) const;

  Heap* heap_ = nullptr;
  char* area_ = nullptr;
  const CmaAgreement* cma_ = nullptr;
  Executor* exec_ = nullptr;
};

}  // namespace stratacl
