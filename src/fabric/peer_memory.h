// One interface over every kind of peer memory. What a peer published (a RemoteRef) is reached
// through the access that matches its kind: a peer heap mapped here (loads and memcpy), or the
// peer's process (process_vm_readv, for registered foreign buffers). A remote host's registered
// heap (libfabric RMA) is the next kind; algorithms will not change for it.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "fabric/remote_ref.h"
#include "sync/liveness.h"

namespace stratacl {

// How one kind of peer memory is reached. Addresses are checked: a corrupt or hostile reference
// is an error, never a read outside the peer's memory.
class PeerAccess {
 public:
  virtual ~PeerAccess() = default;
  // A pointer to [addr, addr + bytes) of `peer`'s memory that this process can load from, or
  // nullptr when this kind of memory can only be read with read().
  virtual Result<const char*> view(int peer, uint64_t addr, uint64_t bytes) const = 0;
  // Copies [addr, addr + bytes) of `peer`'s memory into dst (non-temporal stores if `stream`).
  virtual Status read(int peer, uint64_t addr, uint64_t bytes, char* dst, bool stream) const = 0;
};

// Peers' data heaps, mapped read-only in this process.
class MappedAccess final : public PeerAccess {
 public:
  struct Mapping {
    const char* base = nullptr;
    uint64_t bytes = 0;
  };
  explicit MappedAccess(std::vector<Mapping> heaps) : heaps_(std::move(heaps)) {}
  Result<const char*> view(int peer, uint64_t addr, uint64_t bytes) const override;
  Status read(int peer, uint64_t addr, uint64_t bytes, char* dst, bool stream) const override;

 private:
  std::vector<Mapping> heaps_;
};

// Peers' processes, read with process_vm_readv. After each read the peer's pidfd must still say
// it lives: then the pid named that very process during the read, and pid reuse cannot have
// redirected it. Our own process (rank `self`) is plain memory.
class ProcessAccess final : public PeerAccess {
 public:
  ProcessAccess(const Liveness* live, int self) : live_(live), self_(self) {}
  Result<const char*> view(int peer, uint64_t addr, uint64_t) const override {
    return peer == self_ ? reinterpret_cast<const char*>(addr) : nullptr;
  }
  Status read(int peer, uint64_t addr, uint64_t bytes, char* dst, bool stream) const override;

 private:
  const Liveness* live_;
  int self_;
};

class PeerMemory {
 public:
  void bind(RefKind kind, const PeerAccess* access) { access_[size_t(kind)] = access; }

  // Bytes [offset, offset + bytes) of block `block` of what `peer` published as `ref`: a pointer
  // if it is mapped here, nullptr if it must be read().
  Result<const char*> view(int peer, const RemoteRef& ref, size_t block, uint64_t offset,
                           uint64_t bytes) const;
  Status read(int peer, const RemoteRef& ref, size_t block, uint64_t offset, uint64_t bytes,
              char* dst, bool stream = false) const;

 private:
  Result<const PeerAccess*> access(int peer, const RemoteRef& ref) const;
  std::array<const PeerAccess*, 3> access_{};
};

}  // namespace stratacl
