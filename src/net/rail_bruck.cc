// Bruck's algorithms over the hosts of a rail (net/rail.h): a small alltoall, allgather,
// reduce-scatter or allreduce in ceil(log2 H) rounds of one message each way instead of one
// round of H - 1, and the allreduce in halves (the reduce-scatter's rounds, then the gather's),
// at any host count; in every round every host both sends and receives, so that a host in a
// mismatched call meets it there.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "net/rail.h"
#include "net/rail_chunks.h"
#include "reduce/reduce.h"

namespace stratacl::net {
namespace {

// How many of the slots 1..H-1 have bit `span` set (what a round of the alltoall sends): span
// in each full run of 2 span, and the part of the last run past its first span.
size_t moving_slots(int hosts, int span) {
  return size_t(hosts / (2 * span) * span + std::max(0, hosts % (2 * span) - span));
}

}  // namespace

bool Rail::alltoall_in_rounds(size_t bytes) const {
  return bytes > 0 && rounds(topo_.hosts) &&
         alltoall_rounds_pay(topo_.hosts, topo_.per_host, bytes);
}

bool Rail::reduce_scatter_takes_rounds(size_t count, sclDataType_t dt) const {
  return small_in_rounds(count * dtype_size(dt));
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
  const int rounds = log2_rounds(H);
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
  SCL_ASSIGN_OR_RETURN(char* all, scratch(bytes * size_t(topo_.hosts)));
  std::memcpy(all, mine, bytes);
  SCL_TRY(gather_rounds(all, bytes, d));
  return all;
}

Status Rail::gather_rounds(char* all, size_t stride, const Deadline& d) {
  // all[i] (at i * stride) is the block of host me - i (modulo H). In the round of `span`, every
  // host sends the blocks it has, all[0 .. c), c = min(span, H - span), to host me + span,
  // whose all[span .. span + c) they are: after ceil(log2 H) rounds every host has all H. Both
  // ends of a round compute the same c, so every message has the size its receive expects.
  // Every round sends up the hosts, as the alltoall's do, so that in the first round host r + 1
  // hears from host r: a broadcast's first child from its root, and an alltoall's first
  // receive from where it expects it, each naming the mismatch where the other host's call is
  // this one.
  const int H = topo_.hosts, me = topo_.host;
  const bool os = one_sided(stride);  // the same on every rank
  for (int span = 1; span < H; span *= 2) {
    const size_t part = size_t(std::min(span, H - span)) * stride;
    Transfer batch[2] = {send_to(peer((me + span) % H), all, part),
                         recv_from(peer((me - span + H) % H), all + size_t(span) * stride, part)};
    SCL_TRY(run(batch, d, os));
  }
  return Status::Ok();
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
  const size_t H = size_t(topo_.hosts), es = dtype_size(dt);
  SCL_ASSIGN_OR_RETURN(char* work, scratch(2 * H * count * es));
  return reduce_scatter_rounds(parts, out, Chunks{nullptr, count * H, es, int(H)}, dt, op, d, work);
}

Status Rail::reduce_scatter_rounds(std::span<const char* const> parts, char* out, const Chunks& ch,
                                   sclDataType_t dt, sclRedOp_t op, const Deadline& d, char* work) {
  // The alltoall's rounds run backwards: slot i holds the partial for host me + i (i hosts to
  // go), at first our part for it. In round k the slots still held are the multiples of 2^k;
  // every host sends the odd ones, packed in one message, to host me + 2^k, where they land in
  // slots i - 2^k and are reduced into what that host holds there (ours first). The partials
  // for a host meet where their distances to it agree and go on together, so the sends total
  // H - 1 parts, the direct round's bytes, in ceil(log2 H) messages; slot 0 ends with the sum
  // over every host, reduced into `out` in the last round. Both ends of a round pack the parts
  // for the same hosts, so every message has the size its receive expects.
  const int H = topo_.hosts, me = topo_.host;
  const size_t es = ch.es, stride = ch.bytes(H - 1);          // the last chunk is the longest
  auto size = [&](int i) { return ch.bytes((me + i) % H); };  // slot i's part
  std::vector<const char*> slot(static_cast<size_t>(H));
  for (int i = 0; i < H; ++i) slot[size_t(i)] = parts[size_t((me + i) % H)];
  // The slots' running sums (slot i's at i * stride), then the outgoing and incoming packs.
  char* const send = work + stride * size_t(H);
  char* const in = send + stride * size_t(H / 2);
  for (int span = 1; span < H; span *= 2) {
    const char* src = slot[size_t(span)];  // a single part goes from where it is
    size_t n = size(span);
    if (3 * span < H) {
      n = 0;
      for (int i = span; i < H; i += 2 * span) {
        std::memcpy(send + n, slot[size_t(i)], size(i));
        n += size(i);
      }
      src = send;
    }
    // What comes in: the sender's parts for the hosts of our slots 0, 2 span, ..., each as long
    // as ours for that host. One-sided or not is the call's choice, by its longest part.
    size_t m = 0;
    for (int i = 0; i + span < H; i += 2 * span) m += size(i);
    Transfer batch[2] = {send_to(peer((me + span) % H), src, n),
                         recv_from(peer((me - span + H) % H), in, m)};
    SCL_TRY(run(batch, d, one_sided(stride)));
    if (!failure_.ok()) continue;  // what a failed peer sent is not data
    const bool last = 2 * span >= H;
    for (size_t i = 0, at = 0; int(i) + span < H; i += 2 * size_t(span)) {
      char* sum = last ? out : work + i * stride;
      const void* srcs[2] = {slot[i], in + at};
      reduce::reduce_n(sum, srcs, 2, size(int(i)) / es, dt, op, 1);
      slot[i] = sum, at += size(int(i));
    }
  }
  return Status::Ok();
}

bool Rail::allreduce_halves_pay(int hosts, int per_host, size_t bytes) {
  // In message costs C and bytes through the host's link: the direct round costs a latency,
  // 2 (H - 1) messages and (H - 1) L b; the halves 2 R rounds of three and 2 (H - 1) / H L b.
  // Halves where (H - 1) (H - 2) L b > H (6 R - 2 H + 1) C.
  const int64_t H = hosts, R = log2_rounds(hosts);
  const int64_t added = H * (6 * R - 2 * H + 1);
  if (added <= 0) return true;  // from 13 hosts
  const double saved = double(H - 1) * double(H - 2) * double(per_host) * double(bytes);
  return saved > double(added) * double(kHalvesBytesPerMessageCost);
}

Status Rail::allreduce_in_halves(const char* in, char* buf, size_t count, sclDataType_t dt,
                                 sclRedOp_t op, const Deadline& d) {
  // Rabenseifner's allreduce over Bruck's rounds: the reduce-scatter's rounds leave host h the
  // sum of chunk h (the ring's chunks), the gather's rounds bring every host every chunk. Each
  // chunk is reduced once, on its host, so every host gets the same bits; 2 (H - 1) / H of the
  // buffer crosses each way in 2 ceil(log2 H) messages.
  const int H = topo_.hosts, me = topo_.host;
  const Chunks ch{buf, count, dtype_size(dt), H};
  const size_t stride = ch.bytes(H - 1);
  // The reduce-scatter's sums and packs (2 H strides at most), then the gathered chunks.
  SCL_ASSIGN_OR_RETURN(char* work, scratch(3 * stride * size_t(H)));
  char* const all = work + 2 * stride * size_t(H);
  std::vector<const char*> parts;
  for (int h = 0; h < H; ++h) parts.push_back(in + (ch.at(h) - buf));
  SCL_TRY(reduce_scatter_rounds(parts, all, ch, dt, op, d, work));
  // A chunk one element short goes with its stride's last element zeroed, not stale scratch.
  std::memset(all + ch.bytes(me), 0, stride - ch.bytes(me));
  SCL_TRY(gather_rounds(all, stride, d));
  if (!failure_.ok()) return Status::Ok();
  for (int i = 0; i < H; ++i) {
    const int h = (me - i + H) % H;
    std::memcpy(ch.at(h), all + size_t(i) * stride, ch.bytes(h));
  }
  return Status::Ok();
}

}  // namespace stratacl::net
