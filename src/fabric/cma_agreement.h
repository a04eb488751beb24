// Whether the ranks of a communicator may read each other's registered buffers with
// process_vm_readv. The kernel allows it only where ptrace would be (Yama's ptrace_scope or a
// seccomp policy may forbid it), so at init each rank reads every peer's control block that way
// and publishes its verdict in its own block. A registered buffer is published for such reads
// only once every rank said yes; until every rank has decided, calls stage it, and after a
// refusal (logged once) they always do.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "sync/control_block.h"

namespace stratacl {

enum CmaState : uint32_t { kCmaUnknown = 0, kCmaOk = 1, kCmaRefused = 2 };

// The region each rank publishes (sync/region.h).
struct CmaVerdict {
  uint64_t block_va = 0;  // the owner's control block, in its address space (set when made)
  std::atomic<uint32_t> state{kCmaUnknown};
  int32_t err = 0;  // the errno of a refusal
};

class CmaAgreement {
 public:
  // verdicts[r]: rank r's verdict line (ours is verdicts[rank], written through `mine`).
  void bind(int rank, CmaVerdict* mine, std::vector<const CmaVerdict*> verdicts);
  // Probes every peer: reads its block's identity (`blocks[r]->instance`) through
  // process_vm_readv at the address it announced, and publishes the verdict.
  void probe(const std::vector<const ControlBlock*>& blocks, const std::vector<pid_t>& pids);

  // Why this rank cannot read its peers with process_vm_readv, or ok.
  const Status& refusal() const { return refusal_; }
  // True once every rank verified it can read its peers so.
  bool usable() const;

 private:
  int rank_ = 0;
  CmaVerdict* mine_ = nullptr;
  std::vector<const CmaVerdict*> verdicts_;
  Status refusal_;
  mutable CmaState all_ = kCmaUnknown;  // every rank's verdict, once known
};

}  // namespace stratacl
