// The kernel refuses cross-memory reads to one rank: that rank installs a real seccomp filter
// that makes process_vm_readv fail with EPERM, before it joins. Then:
//  - its sclCommRegister fails with sclSystemError, and the message says why;
//  - the other ranks register their malloc buffers fine (they can read every peer), but since
//    one peer cannot read them their calls stage those buffers, logging the reason once
//    (cma_refused.sh checks the log), and every result is still right.
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cstddef>
#include <vector>

#include "fault_common.h"

namespace fault {
namespace {

constexpr int kRefusedRank = 1;

// Lets every system call through but process_vm_readv, which fails with EPERM.
void deny_process_vm_readv() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(std::size(filter)), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    std::perror("installing the seccomp filter");
    std::exit(2);
  }
}

}  // namespace

int run_cma_refused() {
  const char* env_rank = std::getenv("STRATACL_RANK");
  if (!env_rank) {
    std::fprintf(stderr, "cma_refused: run under stratarun\n");
    return 2;
  }
  if (std::atoi(env_rank) == kRefusedRank) deny_process_vm_readv();
  sclComm_t comm = init_or_die();
  int n = 0;
  sclCommCount(comm, &n);

  constexpr size_t kCount = (1 << 20) + 3;
  std::vector<float> send(kCount), recv(kCount, -1.0f);
  for (size_t i = 0; i < kCount; ++i) send[i] = float(g_rank + 1) * float(i % 1000);
  void* handle = nullptr;
  const sclResult_t r = sclCommRegister(comm, send.data(), kCount * sizeof(float), &handle);
  if (g_rank == kRefusedRank) {
    expect_error(r, sclSystemError, comm, "process_vm_readv",
                 "sclCommRegister on the refused rank");
    expect(handle == nullptr, "a failed registration leaves no handle");
  } else if (r == sclSuccess) {
    std::printf("rank %d: registered\n", g_rank);
  } else {
    // The kernel may refuse everyone here (Yama ptrace_scope >= 1): then it must say so too.
    expect_error(r, sclSystemError, comm, "process_vm_readv", "sclCommRegister refused");
    std::printf("rank %d: registration refused too: %s\n", g_rank, sclGetLastError(comm));
  }

  // Several calls: the first may run before every rank has published its verdict.
  const float ranks_sum = float(n * (n + 1) / 2);
  for (int call = 0; call < 3; ++call) {
    expect(sclAllReduce(send.data(), recv.data(), kCount, sclFloat32, sclSum, comm, nullptr) ==
               sclSuccess,
           "allreduce with a registered buffer and a refused peer", sclGetLastError(comm));
    size_t wrong = 0;
    for (size_t i = 0; i < kCount; ++i) wrong += recv[i] != ranks_sum * float(i % 1000);
    expect(wrong == 0, "allreduce result", std::to_string(wrong) + " wrong elements");
  }
  if (handle) expect(sclCommDeregister(comm, handle) == sclSuccess, "sclCommDeregister");
  expect(sclCommDestroy(comm) == sclSuccess, "destroy");
  if (g_failures == 0) std::printf("rank %d: cma_refused OK\n", g_rank);
  return g_failures == 0 ? 0 : 1;
}

}  // namespace fault
