// A rail's share of a host's messages (net/rail.h, Rail::share): where the ranks of a host hold
// the same messages for the other hosts, each sends its share of them only, so that one message
// goes between each pair of hosts where every rail would have sent one.
#include <vector>

#include "net/rail.h"

namespace stratacl::net {

Status Rail::share(const char* mine, size_t stride, size_t bytes, char* from, int first, int step,
                   const Deadline& d) {
  const int H = topo_.hosts, me = topo_.host;
  std::vector<Transfer> batch;
  char* at = from;
  for (int far = first; far < H; far += step, at += bytes) {
    const int to = (me + far) % H;
    batch.push_back(send_to(peer(to), mine + size_t(to) * stride, bytes));
    batch.push_back(recv_from(peer((me + H - far) % H), at, bytes));
  }
  // Every rank of the rail passes the same first and step: where one's batch is empty (first >=
  // H), all are, and the rail's batches stay numbered alike.
  return settle(run(batch, d, one_sided(bytes, int(batch.size() / 2))));
}

}  // namespace stratacl::net
