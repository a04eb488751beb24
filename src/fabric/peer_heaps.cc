#include "fabric/peer_heaps.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <map>
#include <mutex>
#include <utility>

namespace stratacl {
namespace {
struct Mapping {
  char* base;
  uint64_t size;
  int refs;
};
std::mutex g_mu;
std::map<uint64_t, Mapping>& table() {
  static auto* t = new std::map<uint64_t, Mapping>();
  return *t;
}
}  // namespace

PeerHeapRef::PeerHeapRef(PeerHeapRef&& o) noexcept
    : base_(o.base_),
      size_(o.size_),
      nonce_(o.nonce_),
      counted_(std::exchange(o.counted_, false)) {}

PeerHeapRef& PeerHeapRef::operator=(PeerHeapRef&& o) noexcept {
  if (this != &o) {
    reset();
    base_ = o.base_;
    size_ = o.size_;
    nonce_ = o.nonce_;
    counted_ = std::exchange(o.counted_, false);
  }
  return *this;
}

PeerHeapRef::~PeerHeapRef() { reset(); }

void PeerHeapRef::reset() {
  if (!counted_) return;
  counted_ = false;
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = table().find(nonce_);
  if (it != table().end() && --it->second.refs == 0) {
    munmap(it->second.base, it->second.size);
    table().erase(it);
  }
}

Result<PeerHeapRef> PeerHeapRef::acquire(uint64_t nonce, int fd, uint64_t size) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = table().find(nonce);
  if (it != table().end()) {
    ++it->second.refs;
    return PeerHeapRef(it->second.base, it->second.size, nonce, true);
  }
  // Never trust the announced size: map only what the memfd really holds.
  struct stat st;
  if (fstat(fd, &st) != 0) return SystemErrorf("peer heap: fstat");
  if (uint64_t(st.st_size) < size) {
    return Errorf(sclRemoteError, "peer heap: memfd holds %lld bytes, peer announced %llu",
                  (long long)st.st_size, (unsigned long long)size);
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (base == MAP_FAILED)
    return SystemErrorf("peer heap: mmap of %llu bytes", (unsigned long long)size);
  table().emplace(nonce, Mapping{static_cast<char*>(base), size, 1});
  return PeerHeapRef(static_cast<char*>(base), size, nonce, true);
}

Result<PeerHeapRef> PeerHeapRef::share(uint64_t nonce) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = table().find(nonce);
  if (it == table().end())
    return Errorf(sclInternalError, "peer heap %llx is not mapped", (unsigned long long)nonce);
  ++it->second.refs;
  return PeerHeapRef(it->second.base, it->second.size, nonce, true);
}

PeerHeapRef PeerHeapRef::self(char* base, uint64_t size, uint64_t nonce) {
  return PeerHeapRef(base, size, nonce, false);
}

int mapped_peer_heaps() {
  std::lock_guard<std::mutex> lock(g_mu);
  return int(table().size());
}

}  // namespace stratacl
