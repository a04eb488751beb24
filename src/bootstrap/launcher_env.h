// Reads rank, size and rendezvous address from the environment of the launcher that started us:
// stratarun, torchrun, Open MPI, MPICH/Hydra or Slurm.
#pragma once

#include <functional>
#include <string>

#include "bootstrap/unique_id.h"
#include "core/status.h"

namespace stratacl::bootstrap {

struct LaunchEnv {
  std::string launcher;  // "stratarun", "torchrun", "openmpi", "mpich", "slurm"
  int rank = -1, nranks = -1;
  IdData id;                // root address and job secret
  int root_fd = -1;         // stratarun hands rank 0 a listening socket (STRATACL_ROOT_FD)
  bool serve_root = false;  // this rank must run the rendezvous root
};

using EnvLookup = std::function<const char*(const char*)>;

// `env` defaults to getenv; tests pass a map.
Result<LaunchEnv> read_launch_env(const EnvLookup& env = {});

}  // namespace stratacl::bootstrap
