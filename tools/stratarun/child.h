// The rank's side of stratarun's fork: between fork and exec. Only async-signal-safe calls, no
// allocation: everything the child needs is prepared by the parent before the fork.
#pragma once

#include <sched.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "output_relay.h"

namespace stratacl::run {

struct ChildPlan {
  int rank = 0;
  pid_t launcher_pid = 0;
  int root_fd = -1;                         // The rendezvous socket.
  int netns_fd = -1;                        // The network namespace to enter, or -1.
  const OutputRelay* relay = nullptr;       // Null without --tag-output.
  const rlimit* original_nofile = nullptr;  // Set when stratarun raised RLIMIT_NOFILE.
  const cpu_set_t* cpus = nullptr;          // The CPUs to bind to (--bind-to core), or null.
  char* const* argv = nullptr;
  char* const* envp = nullptr;
};

// Sets the rank up (death signal, output, the rendezvous socket, network namespace, signals,
// fd limit, CPU binding) and execs its program; on any failure, says why on stderr and exits.
[[noreturn]] void run_child(const ChildPlan& plan);

}  // namespace stratacl::run
