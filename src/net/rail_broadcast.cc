// The rail's broadcast (net/rail.h): down a tree of hosts from the root (from the root to every
// host at once where its radix is the host count), or down the chain of hosts in segments where
// that costs less.
#include <algorithm>
#include <cmath>
#include <vector>

#include "net/rail.h"
#include "net/rail_chunks.h"

namespace stratacl::net {

int Rail::chain_segments(int hosts, size_t bytes, int radix) {
  const int H = hosts;
  if (H < 3) return 0;  // two hosts: the chain is the flat broadcast with more batches
  // In units of a message's fixed cost, with x = bytes / kChainBytesPerMessageCost: the tree of
  // radix k takes R ((k - 1) x + 1) over its R rounds, each of which a sender's link sends k - 1
  // copies in (radix H, the flat broadcast: (H - 1) x + 1); the chain of S segments
  // (S + H - 2)(1 + x / S), least at S = sqrt((H - 2) x). Both are compared times S, where every
  // term is exact (x is the size over a power of two), so every rank decides alike.
  const double x = double(bytes) / double(kChainBytesPerMessageCost);
  const double best = std::round(std::sqrt((H - 2) * x));
  const int S = int(std::clamp(best, 2.0, double(kChainMaxSegments)));
  const double tree = tree_rounds(H, radix) * ((std::min(radix, H) - 1) * x + 1);
  const bool cheaper = (S + H - 2) * (S + x) < S * tree;
  return cheaper && size_t(S) <= bytes ? S : 0;
}

int Rail::tree_rounds(int hosts, int radix) {
  int rounds = 0;
  for (int64_t span = 1; span < hosts; span *= radix) ++rounds;
  return rounds;
}

int Rail::broadcast_segments(size_t bytes, size_t host_bytes) const {
  const size_t host = host_bytes ? host_bytes : bytes;
  const int segments = chain_segments(topo_.hosts, host, tree_radix(host));
  return segments > 0 && bytes >= size_t(segments) ? segments : 0;
}

Status Rail::broadcast(char* buf, size_t bytes, int root, const Deadline& d, size_t host_bytes) {
  if (const int segments = broadcast_segments(bytes, host_bytes); segments > 0) {
    return settle(broadcast_chain(buf, bytes, root, segments, d));
  }
  const int H = topo_.hosts, h = topo_.host, at = (h - root + H) % H;  // the root's place is 0
  const int64_t k = tree_radix(bytes);
  const bool os = one_sided(bytes);
  std::vector<Transfer> batch;
  const bool pace = paced();
  std::vector<int> heard_from, sent_to;  // where pace: our tree's edges, which the answers take
  // Round j, with span = k^j: the places below the span have the buffer, and each sends it to
  // the places m spans on (0 < m < k); place p hears in the round where span <= p < k span, from
  // place p mod span. Every host runs every round, an empty batch where it has no part, so that
  // the batches' numbers line up.
  for (int64_t span = 1; span < H; span *= k) {
    batch.clear();
    if (at < span) {
      for (int64_t to = at + span; to < std::min<int64_t>(H, at + k * span); to += span) {
        const int child = int((root + to) % H);
        batch.push_back(send_to(peer(child), buf, bytes));
        if (pace) sent_to.push_back(child);
      }
    } else if (at < k * span) {
      const int parent = int((root + at % span) % H);
      batch.push_back(recv_from(peer(parent), buf, bytes));
      if (pace) heard_from.push_back(parent);
    }
    SCL_TRY(run(batch, d, os));
  }
  if (pace) SCL_TRY(answer(heard_from, sent_to, d));
  return settle(Status::Ok());
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
  if (paced()) {
    const int prev_host = (h + H - 1) % H, next_host = (h + 1) % H;
    SCL_TRY(answer(std::span(&prev_host, at > 0 ? 1 : 0), std::span(&next_host, at + 1 < H ? 1 : 0),
                   d));
  }
  return Status::Ok();
}

}  // namespace stratacl::net
