// A rank's worker team: the calling thread plus `size() - 1` helper threads that run the parts of
// one job at a time (fork-join). Helpers start with the first job that needs them (a
// communicator whose calls stay small never makes a thread), spin briefly after a job, so the
// next tile's job finds them awake, then sleep on a futex. The team belongs to one communicator,
// whose calls run one at a time; a job started from inside a job (a part that reaches a parallel
// primitive) runs inline on the thread that asked.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "core/status.h"
#include "exec/function_ref.h"
#include "exec/spin_wait.h"

namespace stratacl {

class Team {
 public:
  Team(int size, SpinPolicy policy);
  ~Team();
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;

  int size() const { return size_; }

  // Runs part(i) for every i in [0, parts): part 0 on the caller, the others on helpers (parts
  // beyond size() wrap around onto them in turn). Every helper checks in on every job, so a
  // job ends only when no thread still touches it. Returns the first error, in thread order.
  Status run(int parts, FunctionRef<Status(int)> part);

 private:
  void helper_loop(int index, uint32_t seen);

  int size_;
  SpinPolicy policy_;
  std::vector<std::thread> helpers_;
  // The job: a new epoch publishes it; `remaining` counts helpers still on it.
  std::atomic<uint32_t> epoch_{0}, remaining_{0};
  std::atomic<uint32_t> epoch_sleepers_{0}, remaining_sleepers_{0};
  std::atomic<bool> busy_{false}, stop_{false};
  int parts_ = 0;
  const FunctionRef<Status(int)>* part_ = nullptr;
  std::vector<Status> results_;
};

}  // namespace stratacl
