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

// The launch of the next communicator made from the environment (sclCommInitFromEnv). Every rank
// makes them in the same order, so the k-th of each rank forms the k-th communicator: its secret
// is the job secret mixed with k, so that a late hello for one can never join another. The
// inherited root socket serves the first; later ones bind the same address.
Result<LaunchEnv> next_env_launch();

}  // namespace stratacl::bootstrap
