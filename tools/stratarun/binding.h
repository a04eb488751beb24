// --bind-to core: each of a host's ranks gets its own share of the CPUs stratarun may run on, as
// MPI launchers bind ranks, so that where the ranks of a host land does not change from one
// launch to the next (the scheduler's placement of unbound ranks does).
#pragma once

#include <sched.h>

#include <vector>

namespace stratacl::run {

// The CPU sets of local ranks 0 .. per_host - 1 over the CPUs this process may run on: with C
// CPUs and L ranks, rank l gets CPUs [l C / L, (l + 1) C / L) in CPU order where L <= C (each
// rank's threads keep a share of their own), and CPU l mod C where L > C (the ranks spread
// evenly, L / C to a CPU). Empty when the process's CPUs cannot be read.
std::vector<cpu_set_t> core_shares(int per_host);

}  // namespace stratacl::run
