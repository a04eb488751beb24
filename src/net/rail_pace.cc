// The answers that pace a rail's one-way operations (net/rail.h, kPaceCalls).
#include <vector>

#include "net/rail.h"

namespace stratacl::net {

Status Rail::answer(std::span<const int> heard_from, std::span<const int> sent_to,
                    const Deadline& d) {
  std::vector<Transfer> batch;
  for (int h : heard_from) batch.push_back(send_to(peer(h), nullptr, 0));
  for (int h : sent_to) batch.push_back(recv_from(peer(h), nullptr, 0));
  // Every rank of the rail runs it in the same call, an empty batch where it has no part, so
  // that the rail's batches stay numbered alike.
  return run(batch, d, false);
}

}  // namespace stratacl::net
