#include "fabric/peer_heaps.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <map>
#include <mutex>
#include <utility>

#include "fabric/heap.h"

namespace stratacl {
namespace {

struct Mapping {
  const char* data;
  char* doorbells;
  uint64_t data_bytes, doorbell_bytes;
  int refs;
};
std::mutex g_mu;
std::map<uint64_t, Mapping>& table() {
  static auto* t = new std::map<uint64_t, Mapping>();
  return *t;
}

// Never trust what a peer says about its fd: map only a sealed memfd that holds what it claims.
Status check_segment(int fd, uint64_t bytes, const char* what) {
  struct stat st;
  if (fstat(fd, &st) != 0) return SystemErrorf("peer %s heap: fstat", what);
  const int seals = fcntl(fd, F_GET_SEALS);
  const int needed = F_SEAL_SHRINK | F_SEAL_GROW;
  if (!S_ISREG(st.st_mode) || seals < 0 || (seals & needed) != needed) {
    return Errorf(sclRemoteError,
                  "peer %s heap: the fd received is not a memfd sealed against shrink and grow",
                  what);
  }
  if (uint64_t(st.st_size) < bytes) {
    return Errorf(sclRemoteError, "peer %s heap: memfd holds %lld bytes, peer announced %llu", what,
                  (long long)st.st_size, (unsigned long long)bytes);
  }
  return Status::Ok();
}

Result<void*> map_segment(int fd, uint64_t bytes, int prot, const char* what) {
  void* p = mmap(nullptr, bytes, prot, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p == MAP_FAILED) {
    return SystemErrorf("peer %s heap: mmap of %llu bytes", what, (unsigned long long)bytes);
  }
  madvise(p, bytes, MADV_DONTFORK);  // fabric/fork_guard.h: a forked child inherits nothing
  return p;
}

}  // namespace

PeerHeapRef::PeerHeapRef(PeerHeapRef&& o) noexcept
    : data_(o.data_),
      doorbells_(o.doorbells_),
      data_bytes_(o.data_bytes_),
      doorbell_bytes_(o.doorbell_bytes_),
      nonce_(o.nonce_),
      counted_(std::exchange(o.counted_, false)) {}

PeerHeapRef& PeerHeapRef::operator=(PeerHeapRef&& o) noexcept {
  if (this != &o) {
    reset();
    data_ = o.data_, doorbells_ = o.doorbells_;
    data_bytes_ = o.data_bytes_, doorbell_bytes_ = o.doorbell_bytes_;
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
    munmap(const_cast<char*>(it->second.data), it->second.data_bytes);
    munmap(it->second.doorbells, it->second.doorbell_bytes);
    table().erase(it);
  }
}

// Under g_mu, with heap `nonce` mapped: one more reference to it.
PeerHeapRef PeerHeapRef::share_locked(uint64_t nonce) {
  Mapping& m = table().at(nonce);
  ++m.refs;
  PeerHeapRef r;
  r.data_ = m.data, r.doorbells_ = m.doorbells;
  r.data_bytes_ = m.data_bytes, r.doorbell_bytes_ = m.doorbell_bytes;
  r.nonce_ = nonce;
  r.counted_ = true;
  return r;
}

Result<PeerHeapRef> PeerHeapRef::acquire(uint64_t nonce, const PeerHeapFds& fds) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (table().count(nonce)) return share_locked(nonce);
  SCL_TRY(check_segment(fds.data, fds.data_bytes, "data"));
  SCL_TRY(check_segment(fds.doorbells, fds.doorbell_bytes, "doorbell"));
  SCL_ASSIGN_OR_RETURN(void* data, map_segment(fds.data, fds.data_bytes, PROT_READ, "data"));
  Result<void*> bells =
      map_segment(fds.doorbells, fds.doorbell_bytes, PROT_READ | PROT_WRITE, "doorbell");
  if (!bells.ok()) {
    munmap(data, fds.data_bytes);
    return bells.status();
  }
  table().emplace(nonce, Mapping{static_cast<const char*>(data), static_cast<char*>(*bells),
                                 fds.data_bytes, fds.doorbell_bytes, 0});
  return share_locked(nonce);
}

Result<PeerHeapRef> PeerHeapRef::share(uint64_t nonce) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!table().count(nonce))
    return Errorf(sclInternalError, "peer heap %llx is not mapped", (unsigned long long)nonce);
  return share_locked(nonce);
}

Result<PeerHeapRef> PeerHeapRef::self() {
  SCL_ASSIGN_OR_RETURN(auto* data, Heap::instance());
  SCL_ASSIGN_OR_RETURN(auto* bells, Heap::doorbells());
  PeerHeapRef r;
  r.data_ = data->base(), r.doorbells_ = bells->base();
  r.data_bytes_ = data->capacity(), r.doorbell_bytes_ = bells->capacity();
  r.nonce_ = data->nonce();
  return r;
}

int mapped_peer_heaps() {
  std::lock_guard<std::mutex> lock(g_mu);
  return int(table().size());
}

}  // namespace stratacl
