#include "binding.h"

namespace stratacl::run {

std::vector<cpu_set_t> core_shares(int per_host) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return {};
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  }
  if (cpus.empty() || per_host < 1) return {};
  const size_t C = cpus.size(), L = size_t(per_host);
  std::vector<cpu_set_t> shares(L);
  for (size_t l = 0; l < L; ++l) {
    CPU_ZERO(&shares[l]);
    if (L > C) {
      CPU_SET(cpus[l % C], &shares[l]);
      continue;
    }
    for (size_t i = l * C / L; i < (l + 1) * C / L; ++i) CPU_SET(cpus[i], &shares[l]);
  }
  return shares;
}

}  // namespace stratacl::run
