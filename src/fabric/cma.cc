#include "fabric/cma.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>

namespace stratacl {
const char* cma_hint(int err) {
  switch (err) {
    case EPERM:
      return " (the kernel forbids it: kernel.yama.ptrace_scope or a seccomp policy)";
    case ENOSYS:
      return " (process_vm_readv is not available in this kernel or sandbox)";
    case ESRCH:
      return " (the process is gone)";
    case EFAULT:
      return " (the peer's buffer is not mapped: freed or deregistered while in use?)";
    default:
      return "";
  }
}

Status cma_read(int rank, pid_t pid, uint64_t remote, void* dst, size_t bytes, int* err_out) {
  auto* out = static_cast<char*>(dst);
  while (bytes > 0) {
    iovec local{out, bytes};
    iovec peer{reinterpret_cast<void*>(remote), bytes};
    const ssize_t got = process_vm_readv(pid, &local, 1, &peer, 1, 0);
    if (got <= 0) {
      const int err = got < 0 ? errno : EFAULT;
      if (err_out) *err_out = err;
      return Errorf(sclSystemError, "process_vm_readv of %zu bytes from rank %d (pid %d): %s%s",
                    bytes, rank, int(pid), std::strerror(err), cma_hint(err));
    }
    out += got, remote += uint64_t(got), bytes -= size_t(got);
  }
  return Status::Ok();
}

Status cma_probe(int rank, pid_t pid, uint64_t remote, uint64_t expect, int* err) {
  uint64_t word = 0;
  SCL_TRY(cma_read(rank, pid, remote, &word, sizeof word, err));
  if (word != expect) {
    *err = EINVAL;
    return Errorf(sclRemoteError,
                  "rank %d (pid %d): its control block is not at the address it announced", rank,
                  int(pid));
  }
  return Status::Ok();
}

}  // namespace stratacl
