#include "fabric/cma_agreement.h"

#include <cstring>

#include "core/log.h"
#include "fabric/cma.h"

namespace stratacl {

void CmaAgreement::bind(int rank, CmaVerdict* mine, std::vector<const CmaVerdict*> verdicts) {
  rank_ = rank;
  mine_ = mine;
  verdicts_ = std::move(verdicts);
}

void CmaAgreement::probe(const std::vector<const ControlBlock*>& blocks,
                         const std::vector<pid_t>& pids) {
  int err = 0;
  constexpr uint64_t kInstanceOffset = offsetof(ControlBlock, instance);
  for (size_t p = 0; p < blocks.size() && refusal_.ok(); ++p) {
    if (int(p) == rank_) continue;
    const uint64_t expect = blocks[p]->instance.load(std::memory_order_acquire);
    refusal_ = cma_probe(int(p), pids[p], verdicts_[p]->block_va + kInstanceOffset, expect, &err);
  }
  if (!refusal_.ok()) log_info("rank %d: %s", rank_, refusal_.message().c_str());
  mine_->err = err;
  mine_->state.store(refusal_.ok() ? kCmaOk : kCmaRefused, std::memory_order_release);
}

bool CmaAgreement::usable() const {
  if (all_ != kCmaUnknown) return all_ == kCmaOk;
  for (size_t p = 0; p < verdicts_.size(); ++p) {
    const uint32_t v = verdicts_[p]->state.load(std::memory_order_acquire);
    if (v == kCmaUnknown) return false;  // still initialising: stage this call, ask again later
    if (v != kCmaOk) {
      all_ = kCmaRefused;
      const int err = verdicts_[p]->err;
      log_warning(
          "rank %d: rank %zu cannot read its peers with process_vm_readv: %s%s; registered "
          "buffers on this communicator take the staged path",
          rank_, p, strerrorname_np(err) ? strerrorname_np(err) : "?", cma_hint(err));
      return false;
    }
  }
  all_ = kCmaOk;
  log_info("rank %d: peers read registered buffers with process_vm_readv", rank_);
  return true;
}

}  // namespace stratacl
