// Bruck's algorithms over the hosts of a rail (net/rail.h): a small alltoall, allgather or
// allreduce in ceil(log2 H) rounds of one message each way instead of one round of H - 1, at
// any host count; in every round every host both sends and receives, so that a host in a
// mismatched call meets it there.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "net/rail.h"
#include "reduce/reduce.h"

namespace stratacl::net {
namespace {

// How many of the slots 1..H-1 have bit `span` set (what a round of the alltoall sends): span
// in each full run of 2 span, and the part of the last run past its first span.
size_t moving_slots(int hosts, int span) {
  return size_t(hosts / (2 * span) * span + std::max(0, hosts % (2 * span) - span));
}

// How many of the slots 1..H-1 are odd multiples of `span` (what a round of the reduce-scatter
// sends): half, rounded up, of the multiples of span below H.
size_t halving_slots(int hosts, int span) { return size_t(((hosts - 1) / span + 1) / 2); }

}  // namespace

bool Rail::alltoall_in_rounds(size_t bytes) const {
  return bytes > 0 && rounds(topo_.hosts) &&
         alltoall_rounds_pay(topo_.hosts, topo_.per_host, bytes);
}

bool Rail::alltoall_rounds_pay(int hosts, int per_host, size_t bytes) {
  const int H = hosts;
  // In bytes, where a message costs kAlltoallBytesPerMessageCost: R rounds of one message each
  // carrying m_k slots, against H - 1 messages of one slot; a host's L rails send alike through
  // its link, so a slot weighs L packs. Rounds where R C + M L b < (H - 1)(C + L b), M = sum m_k.
  const size_t host = size_t(per_host) * bytes;
  if (host >= kAlltoallBytesPerMessageCost * size_t(H)) return false;  // never; no overflow below
  size_t rounds = 0, sent = 0;
  for (int span = 1; span < H; span *= 2) ++rounds, sent += moving_slots(H, span);
  const size_t direct = size_t(H - 1);
  return (sent - direct) * host < (direct - rounds) * kAlltoallBytesPerMessageCost;
}

Status Rail::alltoall(std::span<const char* const> send, std::span<char* const> recv, size_t bytes,
                      const Deadline& d) {
  // Slot i holds a block that has i hosts to go (counted up, modulo H): at first, ours for host
  // me + i. In round k every host sends the slots whose bit k is set, packed in one message, to
  // host me + 2^k and takes the same slots from host me - 2^k: so a block moves by the bits of
  // its distance, staying in its slot, and at the end slot i holds the block of host me - i.
  // Both ends of a round count the same slots, so every message has the size its receive
  // expects, and every host sends and receives in every round (a host in a mismatched call names
  // it there). Received packs stay where they land: a slot's block is read from its last pack.
  const int H = topo_.hosts, me = topo_.host;
  std::vector<const char*> slot(static_cast<size_t>(H));
  for (int i = 0; i < H; ++i) slot[size_t(i)] = send[size_t((me + i) % H)];
  int rounds = 0;
  for (int span = 1; span < H; span *= 2) ++rounds;
  // One outgoing pack (reused) and each round's incoming one: at most H / 2 slots each.
  const size_t pack = size_t(H / 2) * bytes;
  SCL_ASSIGN_OR_RETURN(char* packs, scratch(pack * size_t(rounds + 1)));
  char* out = packs;
  for (int k = 0, span = 1; span < H; ++k, span *= 2) {
    const size_t n = moving_slots(H, span) * bytes;
    char* in = packs + pack * size_t(k + 1);
    for (int i = 1, j = 0; i < H; ++i) {
      if (i & span) std::memcpy(out + size_t(j++) * bytes, slot[size_t(i)], bytes);
    }
    Transfer batch[2] = {send_to(peer((me + span) % H), out, n),
                         recv_from(peer((me - span + H) % H), in, n)};
    SCL_TRY(run(batch, d, one_sided(n)));
    for (int i = 1, j = 0; i < H; ++i) {
      if (i & span) slot[size_t(i)] = in + size_t(j++) * bytes;
    }
  }
  if (failure_.ok()) {
    for (int i = 1; i < H; ++i) std::memcpy(recv[size_t((me - i + H) % H)], slot[size_t(i)], bytes);
  }
  return settle(Status::Ok());
}

Result<char*> Rail::gather_in_rounds(const char* mine, size_t bytes, const Deadline& d) {
  // all[i] is the block of host me - i (modulo H). In the round of `span`, every host sends the
  // blocks it has, all[0 .. c), c = min(span, H - span), to host me + span, whose all[span ..
  // span + c) they are: after ceil(log2 H) rounds every host has all H. Both ends of a round
  // compute the same c, so every message has the size its receive expects. Every round sends
  // up the hosts, as the alltoall's do, so that in the first round host r + 1 hears from host r:
  // a broadcast's first child from its root, and an alltoall's first receive from where it
  // expects it, each naming the mismatch where the other host's call is this one.
  const int H = topo_.hosts, me = topo_.host;
  SCL_ASSIGN_OR_RETURN(char* all, scratch(bytes * size_t(H)));
  std::memcpy(all, mine, bytes);
  const bool os = one_sided(bytes);  // the block size: the same on every rank
  for (int span = 1; span < H; span *= 2) {
    const size_t part = size_t(std::min(span, H - span)) * bytes;
    Transfer batch[2] = {send_to(peer((me + span) % H), all, part),
                         recv_from(peer((me - span + H) % H), all + size_t(span) * bytes, part)};
    SCL_TRY(run(batch, d, os));
  }
  return all;
}

Status Rail::allgather_in_rounds(std::span<char* const> blocks, size_t bytes, const Deadline& d) {
  const int H = topo_.hosts, me = topo_.host;
  SCL_ASSIGN_OR_RETURN(const char* all, gather_in_rounds(blocks[size_t(me)], bytes, d));
  if (!failure_.ok()) return Status::Ok();
  for (int i = 1; i < H; ++i) {
    std::memcpy(blocks[size_t((me - i + H) % H)], all + size_t(i) * bytes, bytes);
  }
  return Status::Ok();
}

Status Rail::allreduce_in_rounds(const char* in, char* buf, size_t count, sclDataType_t dt,
                                 sclRedOp_t op, const Deadline& d) {
  // Every host gathers every host's input, then reduces them in host order, as the direct round
  // does: the same bits on every host, for every op (float max and min too).
  const int H = topo_.hosts, me = topo_.host;
  const size_t bytes = count * dtype_size(dt);
  SCL_ASSIGN_OR_RETURN(const char* all, gather_in_rounds(in, bytes, d));
  std::vector<const void*> srcs;
  for (int h = 0; h < H; ++h) srcs.push_back(all + size_t((me - h + H) % H) * bytes);
  if (failure_.ok()) reduce::reduce_n(buf, srcs.data(), H, count, dt, op, 1);
  return Status::Ok();
}

Status Rail::reduce_scatter_in_rounds(std::span<const char* const> parts, char* out, size_t count,
                                      sclDataType_t dt, sclRedOp_t op, const Deadline& d) {
  // The alltoall's rounds run backwards: slot i holds the partial for host me + i (i hosts to
  // go), at first our part for it. In round k the slots still held are the multiples of 2^k;
  // every host sends the odd ones, packed in one message, to host me + 2^k, where they land in
  // slots i - 2^k and are reduced into what that host holds there (ours first). The partials
  // for a host meet where their distances to it agree and go on together, so the sends total
  // H - 1 parts, the direct round's bytes, in ceil(log2 H) messages; slot 0 ends with the sum
  // over every host, reduced into `out` in the last round.
  const int H = topo_.hosts, me = topo_.host;
  const size_t bytes = count * dtype_size(dt);
  std::vector<const char*> slot(static_cast<size_t>(H));
  for (int i = 0; i < H; ++i) slot[size_t(i)] = parts[size_t((me + i) % H)];
  // The slots' running sums (slot i's at i), then the outgoing and incoming packs.
  const size_t pack = size_t(H / 2) * bytes;
  SCL_ASSIGN_OR_RETURN(char* sums, scratch(bytes * size_t(H) + 2 * pack));
  char* const send = sums + bytes * size_t(H);
  char* const in = send + pack;
  for (int span = 1; span < H; span *= 2) {
    const size_t n = halving_slots(H, span);
    const char* src = slot[size_t(span)];  // a single slot goes from where it is
    if (n > 1) {
      for (int i = span, j = 0; i < H; i += 2 * span) {
        std::memcpy(send + size_t(j++) * bytes, slot[size_t(i)], bytes);
      }
      src = send;
    }
    Transfer batch[2] = {send_to(peer((me + span) % H), src, n * bytes),
                         recv_from(peer((me - span + H) % H), in, n * bytes)};
    SCL_TRY(run(batch, d, one_sided(n * bytes)));
    if (!failure_.ok()) continue;  // what a failed peer sent is not data
    const bool last = 2 * span >= H;
    for (int i = 0, j = 0; i + span < H; i += 2 * span) {
      char* sum = last ? out : sums + size_t(i) * bytes;
      const void* srcs[2] = {slot[size_t(i)], in + size_t(j++) * bytes};
      reduce::reduce_n(sum, srcs, 2, count, dt, op, 1);
      slot[size_t(i)] = sum;
    }
  }
  return Status::Ok();
}

}  // namespace stratacl::net
