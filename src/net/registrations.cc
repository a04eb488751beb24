#include "net/registrations.h"

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <random>

#include "fabric/heap.h"

namespace stratacl::net {

Registrations::~Registrations() { close_all(); }

void Registrations::close_all() {
  end_batch();
  for (auto& [range, held] : heap_) fi_close(&held.mr->fid);
  heap_.clear();
}

Result<fid_mr*> Registrations::reg(const void* p, size_t bytes, uint64_t access) {
  fid_mr* mr = nullptr;
  // Where the provider does not choose keys (no FI_MR_PROV_KEY) we do: random ones, unique in the
  // domain (a clash is refused with FI_ENOKEY and drawn again), so that a stranger who can reach
  // the endpoint cannot guess one and write into our memory. `key_size` may be under 8 bytes.
  const size_t key_bits = std::min<size_t>(64, 8 * key_size_);
  const uint64_t key_mask = key_bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << key_bits) - 1;
  std::random_device random;  // the kernel's: one draw per registration
  int rc = -FI_ENOKEY;
  for (int tries = 0; rc == -FI_ENOKEY && tries < 8; ++tries) {
    const uint64_t key = (uint64_t(random()) << 32 | random()) & key_mask;
    rc = fi_mr_reg(domain_, p, bytes, access, 0, key, 0, &mr, nullptr);
  }
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

Result<Registrations::Region> Registrations::region(const void* p, size_t bytes, bool needed) {
  if (bytes == 0) return Region{nullptr, nullptr};
  Result<Heap*> heap = Heap::instance();
  if (heap.ok() && (*heap)->contains(p, bytes)) {
    const uint64_t off = (*heap)->offset_of(p);
    const std::pair<uint64_t, uint64_t> range{off / kChunkBytes, (off + bytes - 1) / kChunkBytes};
    const uint64_t punches = (*heap)->punches();
    const char* first = (*heap)->base() + range.first * kChunkBytes;
    auto it = heap_.find(range);
    if (it != heap_.end() && it->second.punches != punches) {
      // Pages of the range may have been replaced: register again. The old registration stays
      // open until the batch ends, as a descriptor or key of it may already be out in this one.
      temporary_.push_back(it->second.mr);
      heap_.erase(it);
      it = heap_.end();
    }
    if (it == heap_.end()) {
      const uint64_t end = std::min((range.second + 1) * kChunkBytes, (*heap)->capacity());
      SCL_ASSIGN_OR_RETURN(auto* mr, reg(first, end - range.first * kChunkBytes, local_access()));
      it = heap_.emplace(range, Held{mr, punches}).first;
    }
    return Region{it->second.mr, first};
  }
  if (!needed) return Region{nullptr, nullptr};
  SCL_ASSIGN_OR_RETURN(auto* mr, reg(p, bytes, local_access()));
  temporary_.push_back(mr);
  return Region{mr, static_cast<const char*>(p)};
}

Result<void*> Registrations::desc(const void* p, size_t bytes) {
  SCL_ASSIGN_OR_RETURN(Region r, region(p, bytes, (mr_mode_ & FI_MR_LOCAL) != 0));
  return r.mr ? fi_mr_desc(r.mr) : nullptr;
}

Result<Registrations::Remote> Registrations::remote(const void* p, size_t bytes) {
  if (bytes == 0) return Remote{0, 0};  // nothing to write
  // A window of exactly this buffer, closed when the batch ends: its key lets a peer write
  // nowhere else, and at no other time.
  SCL_ASSIGN_OR_RETURN(auto* mr, reg(p, bytes, FI_REMOTE_WRITE));
  temporary_.push_back(mr);
  return Remote{(mr_mode_ & FI_MR_VIRT_ADDR) ? reinterpret_cast<uint64_t>(p) : 0, fi_mr_key(mr)};
}

void Registrations::end_batch() {
  for (fid_mr* mr : temporary_) fi_close(&mr->fid);
  temporary_.clear();
}

}  // namespace stratacl::net
