#include "net/topology.h"

#include <map>
#include <numeric>

namespace stratacl::net {

Result<Topology> Topology::of(const std::vector<uint64_t>& host_ids, int me) {
  const int n = int(host_ids.size());
  if (n == 0) return Errorf(sclInvalidUsage, "a layout of no ranks");
  std::map<uint64_t, int> first;  // host identity -> its index, in the order of first ranks
  std::vector<int> count;
  for (int r = 0; r < n; ++r) {
    auto [it, fresh] = first.emplace(host_ids[size_t(r)], int(count.size()));
    if (fresh) count.push_back(0);
    ++count[size_t(it->second)];
  }
  Topology t;
  t.hosts = int(count.size());
  t.per_host = n / t.hosts;
  for (int h = 1; h < t.hosts; ++h) {
    if (count[size_t(h)] != count[0]) {
      return Errorf(sclInvalidUsage,
                    "the ranks span %d hosts, host 0 with %d of them and host %d with %d: the "
                    "hierarchy needs every host to hold the same number",
                    t.hosts, count[0], h, count[size_t(h)]);
    }
  }
  for (int r = 0; r < n; ++r) {
    if (first[host_ids[size_t(r)]] != r / t.per_host) {
      return Errorf(sclInvalidUsage,
                    "rank %d is not numbered with its host's ranks: the hierarchy needs host h to "
                    "hold ranks h*%d .. h*%d+%d (as torchrun, Slurm and mpirun place them)",
                    r, t.per_host, t.per_host, t.per_host - 1);
    }
  }
  t.host = me / t.per_host;
  t.local = me % t.per_host;
  return t;
}

std::vector<uint64_t> Topology::nodes(const std::vector<uint64_t>& host_ids) {
  if (host_ids.empty() || of(host_ids, 0).ok()) return host_ids;
  // The runs of consecutive ranks on one host; each is cut into nodes of the largest size that
  // divides them all (1: every rank its own node).
  std::vector<size_t> runs = {1};
  for (size_t r = 1; r < host_ids.size(); ++r) {
    if (host_ids[r] == host_ids[r - 1]) {
      ++runs.back();
    } else {
      runs.push_back(1);
    }
  }
  size_t size = 0;
  for (size_t run : runs) size = std::gcd(size, run);
  std::vector<uint64_t> each(host_ids.size());
  for (size_t r = 0; r < each.size(); ++r) each[r] = r / size;
  return each;
}

}  // namespace stratacl::net
