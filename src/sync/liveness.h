// Watches local peers' lives through pidfds: a pidfd polls readable once its process exits, for
// any reason (signal, exit, abort), so a dead peer is seen at the next check.
#pragma once

#include <sys/types.h>

#include <vector>

#include "core/status.h"
#include "core/unique_fd.h"

namespace stratacl {

class Liveness {
 public:
  // pids[r] < 0 for ranks not watched (ourselves).
  static Result<Liveness> watch(const std::vector<pid_t>& pids);
  // Watches through pidfds opened already: fds[r] must be pids[r]'s (invalid: not watched).
  static Liveness adopt(std::vector<pid_t> pids, std::vector<UniqueFd> fds);
  Liveness() = default;

  bool is_dead(int rank) const;
  // Every rank's state in one poll(2).
  std::vector<bool> dead_ranks() const;
  pid_t pid_of(int rank) const { return pids_[size_t(rank)]; }

 private:
  std::vector<pid_t> pids_;
  std::vector<UniqueFd> fds_;
};

}  // namespace stratacl
