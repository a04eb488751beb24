#include "fabric/staging.h"

#include "exec/copy.h"

namespace stratacl {

StagedBlock& StagedBlock::operator=(StagedBlock&& o) noexcept {
  if (this != &o) {
    reset();
    heap_ = o.heap_;
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

Result<StagedBlock> StagedBlock::allocate(Heap* heap, size_t bytes) {
  SCL_ASSIGN_OR_RETURN(void* p, heap->allocate(bytes));
  StagedBlock b;
  b.heap_ = heap;
  b.ptr_ = static_cast<char*>(p);
  b.bytes_ = bytes;
  return b;
}

void StagedBlock::reset() {
  if (ptr_) (void)heap_->release(std::exchange(ptr_, nullptr));
  bytes_ = 0;
}

void Quarantine::keep(StagedBlock block) {
  if (!block) return;
  std::lock_guard<std::mutex> lock(mu_);
  blocks_.push_back(std::move(block));
}

void Quarantine::release_all() {
  std::lock_guard<std::mutex> lock(mu_);
  blocks_.clear();
}

void Quarantine::leak_all() {
  std::lock_guard<std::mutex> lock(mu_);
  for (StagedBlock& b : blocks_) b.leak();
  blocks_.clear();
}

RemoteRef Stager::in_place(const Outgoing& out) const {
  switch (out.src.kind) {
    case MemKind::kHeap:
      return RemoteRef{heap_->offset_of(out.src.ptr), out.stride, RefKind::kMapped};
    case MemKind::kRegistered:
      if (cma_usable())
        return RemoteRef{reinterpret_cast<uintptr_t>(out.src.ptr), out.stride, RefKind::kProcess};
      return RemoteRef{};
    case MemKind::kForeign:
      break;
  }
  return RemoteRef{};
}

void Stager::copy(char* dst, const char* src, size_t bytes) const {
  if (exec_) {
    exec_->copy(dst, src, bytes, false);
  } else {
    copy_bytes(dst, src, bytes);
  }
}

RemoteRef Stager::stage(const Outgoing& out, char* dst) const {
  for (int b = 0; b < out.nblocks; ++b) {
    copy(dst + size_t(b) * out.block_bytes, out.src.ptr + size_t(b) * out.stride, out.block_bytes);
  }
  return RemoteRef{heap_->offset_of(dst), out.block_bytes, RefKind::kMapped};
}

RemoteRef Stager::publish(const Outgoing& out, size_t area_offset) const {
  const RemoteRef r = in_place(out);
  return r.kind != RefKind::kNone ? r : stage(out, area_ + area_offset);
}

Result<RemoteRef> Stager::publish_prefixes(const Outgoing& out, const std::vector<size_t>& used,
                                           StagedBlock* block, bool* packed) const {
  *packed = false;
  const RemoteRef r = in_place(out);
  if (r.kind != RefKind::kNone) return r;
  size_t total = 0;
  for (size_t u : used) total += u;
  if (total == 0) return RemoteRef{0, 0, RefKind::kMapped};  // nothing to read
  if (Status s = fit(block, total); !s.ok()) return s;
  size_t at = 0;
  for (size_t b = 0; b < used.size(); ++b) {
    copy(block->get() + at, out.src.ptr + b * out.stride, used[b]);
    at += used[b];
  }
  *packed = true;
  return RemoteRef{heap_->offset_of(block->get()), 0, RefKind::kMapped};
}

// A kept block is replaced when too small, and when it holds four times what a call needs (and
// at least 4 MiB): one large call must not pin that much of the shared heap for good.
Status Stager::fit(StagedBlock* block, size_t bytes) const {
  const bool oversized = block->bytes() >= (size_t(4) << 20) && block->bytes() / 4 > bytes;
  if (block->bytes() >= bytes && !oversized) return Status::Ok();
  block->reset();  // first, so that the heap can reuse its range
  SCL_ASSIGN_OR_RETURN(*block, StagedBlock::allocate(heap_, bytes));
  return Status::Ok();
}

Result<RemoteRef> Stager::publish_own(const Outgoing& out, StagedBlock* block) const {
  const RemoteRef r = in_place(out);
  if (r.kind != RefKind::kNone) return r;
  if (out.staged_bytes() == 0) return RemoteRef{0, 0, RefKind::kMapped};  // nothing to read
  if (Status s = fit(block, out.staged_bytes()); !s.ok()) return s;
  return stage(out, block->get());
}

}  // namespace stratacl
