// The rail's broadcast (net/rail.h): from the root to every host at once, or down the chain of
// hosts in segments where that costs less.
#include <algorithm>
#include <cmath>
#include <vector>

#include "net/rail.h"
#include "net/rail_chunks.h"

namespace stratacl::net {

int Rail::chain_segments(int hosts, size_t bytes) {
  const int H = hosts;
  if (H < 3) return 0;  // two hosts: the chain is the flat broadcast with more batches
  // In units of a message's fixed cost, with x = bytes / kChainBytesPerMessageCost: the flat
  // broadcast takes (H - 1) x + 1 (the root's link sends H - 1 copies), the chain of S segments
  // (S + H - 2)(1 + x / S), least at S = sqrt((H - 2) x). Both are compared times S, where every
  // term is exact (x is the size over a power of two), so every rank decides alike.
  const double x = double(bytes) / double(kChainBytesPerMessageCost);
  const double best = std::round(std::sqrt((H - 2) * x));
  const int S = int(std::clamp(best, 2.0, double(kChainMaxSegments)));
  const bool cheaper = (S + H - 2) * (S + x) < S * ((H - 1) * x + 1);
  return cheaper && size_t(S) <= bytes ? S : 0;
}

int Rail::broadcast_segments(size_t bytes, size_t host_bytes) const {
  const int segments = chain_segments(topo_.hosts, host_bytes ? host_bytes : bytes);
  return segments > 0 && bytes >= size_t(segments) ? segments : 0;
}

Status Rail::broadcast(char* buf, size_t bytes, int root, const Deadline& d, size_t host_bytes) {
  if (const int segments = broadcast_segments(bytes, host_bytes); segments > 0) {
    return settle(broadcast_chain(buf, bytes, root, segments, d));
  }
  std::vector<Transfer> batch;
  if (topo_.host == root) {
    for (int h = 0; h < topo_.hosts; ++h) {
      if (h != root) batch.push_back(send_to(peer(h), buf, bytes));
    }
  } else {
    batch.push_back(recv_from(peer(root), buf, bytes));
  }
  return settle(run(batch, d, one_sided(bytes)));
}

Status Rail::broadcast_chain(char* buf, size_t bytes, int root, int segments, const Deadline& d) {
  const int H = topo_.hosts, h = topo_.host, at = (h - root + H) % H;  // our place in the chain
  const Chunks seg{buf, bytes, 1, segments};
  const bool os = one_sided(seg.bytes(0));  // the smallest segment: the same on every rank
  const int next = peer((h + 1) % H), prev = peer((h + H - 1) % H);
  // Batch s: segment s - at goes on to the next host while segment s - at + 1 comes in from the
  // previous one. The message of segment j between places q and q + 1 is batch j + q on both
  // ends, so every host runs the same S + H - 2 batches and their numbers line up.
  for (int s = 0; s + 2 < seg.parts + H; ++s) {
    Transfer batch[2];
    size_t n = 0;
    if (const int out = s - at; at + 1 < H && out >= 0 && out < seg.parts) {
      batch[n++] = send_to(next, seg.at(out), seg.bytes(out));
    }
    if (const int in = s - at + 1; at > 0 && in >= 0 && in < seg.parts) {
      batch[n++] = recv_from(prev, seg.at(in), seg.bytes(in));
    }
    SCL_TRY(run(std::span(batch, n), d, os));
  }
  return Status::Ok();
}

}  // namespace stratacl::net
