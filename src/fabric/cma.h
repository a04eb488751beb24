// Cross-memory attach: a kernel-assisted single copy out of another local process's address
// space (process_vm_readv). It is how peers read a rank's registered foreign buffers without a
// staging copy. The kernel allows it only where ptrace would be allowed (same uid, and Yama's
// ptrace_scope or a seccomp policy may forbid it), so each rank probes every peer at init.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace stratacl {

// Copies `bytes` from address `remote` in process `pid` into `dst`, completing partial reads.
// Errors (EPERM, ESRCH, EFAULT) come back as sclSystemError naming `rank`, and their errno in
// `*err` when err is not null.
Status cma_read(int rank, pid_t pid, uint64_t remote, void* dst, size_t bytes, int* err = nullptr);

// Reads the 8-byte word at `remote` in `pid` and checks it equals `expect`: proof that the
// kernel lets this process read that peer and that the address is the one the peer announced.
// `*err` gets the errno of a refused read (EINVAL for a wrong word).
Status cma_probe(int rank, pid_t pid, uint64_t remote, uint64_t expect, int* err);

// Why process_vm_readv failed with `err`, in words, for messages.
const char* cma_hint(int err);

}  // namespace stratacl
