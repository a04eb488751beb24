#include "net/registrations.h"

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <algorithm>

#include "fabric/heap.h"

namespace stratacl::net {

Registrations::~Registrations() {
  end_batch();
  for (auto& [range, held] : heap_) fi_close(&held.mr->fid);
}

Result<fid_mr*> Registrations::reg(const void* p, size_t bytes) {
  fid_mr* mr = nullptr;
  // Keys must be unique in the domain where the provider does not choose them (FI_MR_PROV_KEY).
  int rc = fi_mr_reg(domain_, p, bytes, FI_SEND | FI_RECV, 0, ++next_key_, 0, &mr, nullptr);
  if (rc == 0 && ep_) {
    rc = fi_mr_bind(mr, &ep_->fid, 0);
    if (rc == 0) rc = fi_mr_enable(mr);
    if (rc != 0) fi_close(&mr->fid);
  }
  if (rc != 0) {
    return Errorf(sclSystemError, "libfabric: registering %zu bytes at %p: %s", bytes, p,
                  fi_strerror(-rc));
  }
  return mr;
}

Result<void*> Registrations::desc(const void* p, size_t bytes) {
  if (bytes == 0) return static_cast<void*>(nullptr);
  Result<Heap*> heap = Heap::instance();
  if (heap.ok() && (*heap)->contains(p, bytes)) {
    const uint64_t off = (*heap)->offset_of(p);
    const std::pair<uint64_t, uint64_t> range{off / kChunkBytes, (off + bytes - 1) / kChunkBytes};
    const uint64_t punches = (*heap)->punches();
    auto it = heap_.find(range);
    if (it != heap_.end() && it->second.punches != punches) {
      fi_close(&it->second.mr->fid);  // pages of the range may have been replaced
      heap_.erase(it);
      it = heap_.end();
    }
    if (it == heap_.end()) {
      const uint64_t first = range.first * kChunkBytes;
      const uint64_t end = std::min((range.second + 1) * kChunkBytes, (*heap)->capacity());
      Result<fid_mr*> mr = reg((*heap)->base() + first, end - first);
      if (!mr.ok()) return mr.status();
      it = heap_.emplace(range, Held{*mr, punches}).first;
    }
    return fi_mr_desc(it->second.mr);
  }
  if (!local_required_) return static_cast<void*>(nullptr);
  Result<fid_mr*> mr = reg(p, bytes);
  if (!mr.ok()) return mr.status();
  temporary_.push_back(*mr);
  return fi_mr_desc(*mr);
}

void Registrations::end_batch() {
  for (fid_mr* mr : temporary_) fi_close(&mr->fid);
  temporary_.clear();
}

}  // namespace stratacl::net
