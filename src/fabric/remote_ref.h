// How peers reach a buffer that a rank published: the one tagged reference every algorithm hands
// to PeerMemory (fabric/peer_memory.h), whatever kind of memory is behind it.
#pragma once

#include <cstdint>

namespace stratacl {

enum class RefKind : uint32_t {
  kNone = 0,
  kMapped = 1,   // addr is an offset into the owner's data heap, which we map
  kProcess = 2,  // addr is an address in the owner's process, read with process_vm_readv
  // Next: kRemote, a range of a heap registered with the fabric on another host (libfabric RMA).
};

struct RemoteRef {
  uint64_t addr = 0;
  uint64_t stride = 0;  // block b starts at addr + b * stride
  RefKind kind = RefKind::kNone;
  uint32_t reserved = 0;
};

}  // namespace stratacl
