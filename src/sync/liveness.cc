#include "sync/liveness.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace stratacl {

Result<Liveness> Liveness::watch(const std::vector<pid_t>& pids) {
  std::vector<UniqueFd> fds;
  for (pid_t pid : pids) {
    if (pid <= 0 || pid == getpid()) {
      fds.emplace_back();
      continue;
    }
    int fd = int(syscall(SYS_pidfd_open, pid, 0));
    if (fd < 0) {
      // ESRCH: the peer is already gone; keep an invalid fd and report it as dead.
      if (errno == ESRCH) {
        fds.emplace_back(-2);
        continue;
      }
      return SystemErrorf("pidfd_open(%d)", pid);
    }
    fds.emplace_back(fd);
  }
  return adopt(pids, std::move(fds));
}

Liveness Liveness::adopt(std::vector<pid_t> pids, std::vector<UniqueFd> fds) {
  Liveness l;
  l.pids_ = std::move(pids);
  l.fds_ = std::move(fds);
  return l;
}

std::vector<bool> Liveness::dead_ranks() const {
  std::vector<bool> dead(fds_.size());
  std::vector<pollfd> p;
  std::vector<size_t> rank_of;
  for (size_t r = 0; r < fds_.size(); ++r) {
    if (fds_[r].get() == -2) dead[r] = true;
    if (!fds_[r].valid()) continue;
    p.push_back({fds_[r].get(), POLLIN, 0});
    rank_of.push_back(r);
  }
  if (!p.empty() && poll(p.data(), p.size(), 0) > 0) {
    for (size_t i = 0; i < p.size(); ++i) dead[rank_of[i]] = p[i].revents != 0;
  }
  return dead;
}

}  // namespace stratacl

namespace stratacl {

bool Liveness::is_dead(int rank) const {
  const UniqueFd& fd = fds_[size_t(rank)];
  if (fd.get() == -2) return true;
  if (!fd.valid()) return false;
  pollfd p{fd.get(), POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

}  // namespace stratacl
