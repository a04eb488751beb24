#include "net/rail.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/hash.h"
#include "fabric/heap.h"
#include "net/rail_chunks.h"
#include "reduce/reduce.h"

namespace stratacl::net {
namespace {

// A tag (45 bits, below the endpoint's own: see kFailedTag): the space in the top two (rail
// batches, world batches, point-to-point), then the call (begin(): its kind in 4 bits, an
// argument hash in 17, and its number in 6), then the batch number in 16, which may wrap:
// batches of one space complete in order, so no message can be 2^16 batches old. Rail and world
// receives of data match any call and batch of their peer, in either of those two spaces, and
// compare all three once the message has landed (run_signed(), exchange(), exchange_even(); size
// words match their own batch). The call's number keeps hosts in step where a host skipped a
// call's rail batches (a fatal failure there, or a group's call after one that failed): its next
// call's messages carry the batch numbers the other hosts still wait for, and only the number
// says they are another call's (a mismatch, named at once, never data taken for this call's).
// Point-to-point tags use all 43 bits below the space for their number.
constexpr uint64_t kWorldTags = uint64_t(1) << 43;
constexpr uint64_t kP2PTags = uint64_t(2) << 43;
constexpr uint64_t kSizeTags = uint64_t(3) << 43;  // run_sized()'s expectations
static_assert((kSizeTags | (kSizeTags - 1)) < kFailedTag);
constexpr uint64_t kTagMask = kWorldTags - 1;
// What a rail or world batch's receive ignores when matching (and compares once the message has
// landed): the space bit that tells those two apart, the kinds of one-sided messages (a
// clear-to-send or a notice), and the failed bit.
constexpr uint64_t kRailOrWorld = kWorldTags | kKindTags | kFailedTag;
constexpr int kBatchBits = 16, kSeqBits = 6, kArgsBits = 17, kKindBits = 4;
constexpr int kCallShift = kBatchBits + kSeqBits;  // where the kind and hash start
static_assert(kWorldTags == uint64_t(1) << (kCallShift + kArgsBits + kKindBits));
constexpr uint64_t kBatchMask = (uint64_t(1) << kBatchBits) - 1;
constexpr uint64_t kSeqMask = (uint64_t(1) << kSeqBits) - 1;
constexpr uint64_t kCallMask = ((uint64_t(1) << (kSeqBits + kArgsBits + kKindBits)) - 1)
                               << kBatchBits;
constexpr uint64_t kSignatureMask = ((uint64_t(1) << (kArgsBits + kKindBits)) - 1) << kCallShift;

uint32_t kind_of(uint64_t tag) { return uint32_t(tag >> (kCallShift + kArgsBits)) & 15; }
uint64_t signature_of(uint64_t tag) { return tag >> kCallShift; }  // kind and argument hash

}  // namespace

Rail::Rail(std::unique_ptr<Endpoint> ep, Topology topo, StopCheck stop,
           const char* (*call_name)(uint32_t kind))
    : ep_(std::move(ep)), topo_(topo), stop_(std::move(stop)), call_name_(call_name) {
  ep_->on_mismatch([this](uint64_t theirs, uint64_t ours) {
    const std::string mine = call_name_(kind_of(ours));
    if (signature_of(theirs & kTagMask) == signature_of(ours & kTagMask)) {
      return "is in another call (the same " + mine +
             " signature): a host skipped a call that failed there, or this one did";
    }
    if (kind_of(theirs) == kind_of(ours)) {
      return "called " + mine + " with other arguments (dtype, op, count or root) than this rank";
    }
    return std::string("called ") + call_name_(kind_of(theirs)) + " where this rank called " +
           mine + ": mismatched calls across hosts";
  });
}

void Rail::begin(uint32_t kind, uint64_t args) {
  // Fibonacci hashing folds every argument bit into the 17 kept.
  const uint64_t h = (args * kGoldenGamma) >> (64 - kArgsBits);
  ++calls_;
  call_ = (((uint64_t(kind & 15) << kArgsBits) | h) << kCallShift) |
          ((calls_ & kSeqMask) << kBatchBits);
  failure_ = Status::Ok();
  failed_here_ = false;
  ep_->excuse_in_failed_calls(0);
}

void Rail::go_on_through_failures() { ep_->excuse_in_failed_calls(kSignatureMask); }

void Rail::fail_call() {
  failed_here_ = true;
  if (failure_.ok()) failure_ = Errorf(sclInvalidUsage, "the call failed on this %s", topo_.unit());
}

Status Rail::settle(Status s) const { return s.ok() ? failure_ : s; }

Transfer Rail::send_to(int peer, const void* buf, size_t bytes) {
  Transfer t;
  t.send = true;
  t.peer = peer;
  t.buf = const_cast<void*>(buf);  // a send only reads it
  t.bytes = bytes;
  return t;
}

Transfer Rail::recv_from(int peer, void* buf, size_t bytes) {
  Transfer t;
  t.peer = peer;
  t.buf = buf;
  t.bytes = bytes;
  return t;
}

std::string Rail::who(int world) const {
  return "rank " + std::to_string(world) + " (" + topo_.unit() + " " +
         std::to_string(topo_.host_of(world)) + ")";
}

Status Rail::run_tagged(std::span<Transfer> batch, const Deadline& d) {
  return ep_->run(batch, d, stop_, [this](int w) { return who(w); });
}

Rail::~Rail() { release_scratch(); }

Deadline Rail::patience(const Deadline& d) const {
  // A call that failed here waits for its peers' part at most kFailedCallPatienceMs a batch: a
  // rank whose own call differs from its peers' (a reduce to another root, another collective)
  // may wait for peers that take no part. Then the endpoint closes, and the communicator with
  // it, as after any failed batch.
  if (!failed_here_) return d;
  return Deadline::at_ns(std::min(d.at_ns(), now_ns() + kFailedCallPatienceMs * 1000000));
}

Status Rail::went_through(Status s, std::span<const Transfer> batch) {
  // A batch that ended with the endpoint still usable (a message shorter than its receive) is
  // done: the call goes on, failed, so that every host runs the same batches.
  if (!s.ok() && !ep_->closed()) {
    if (failure_.ok()) failure_ = std::move(s);
    s = Status::Ok();
  }
  SCL_TRY(s);
  for (const Transfer& t : batch) {
    if (t.peer_failed && failure_.ok()) {
      failure_ = Errorf(sclInvalidUsage,
                        "the call failed on another %s (%s said so): a step among its ranks "
                        "found their calls mismatched",
                        topo_.unit(), who(t.peer).c_str());
    }
  }
  return Status::Ok();
}

Status Rail::run(std::span<Transfer> batch, const Deadline& d, bool one_sided) {
  // One kind per batch, so a receive may match a message of either kind (clear-to-send or
  // data): one of the other kind can only be another call's, and is reported as such.
  for (Transfer& t : batch) t.one_sided = one_sided;
  return went_through(run_signed(batch, call_ | (++tag_ & kBatchMask), patience(d)), batch);
}

Status Rail::world_batch(std::span<Transfer> batch, const Deadline& d, bool one_sided) {
  // After a failure, the batch's transfers say so, and its sends carry nothing (fail_call()),
  // as a rail batch's; its receives take a rail batch's message as well as a world batch's
  // (kRailOrWorld), as a rail batch's do. One-sided, it has no size words: a clear-to-send says
  // the size, and the sender checks it (net/one_sided.cc).
  const uint64_t tag = kWorldTags | call_ | (++world_tag_ & kBatchMask) | failed_bit();
  for (Transfer& t : batch) {
    t.tag = tag, t.ignore = kCallMask | kBatchMask | kRailOrWorld, t.one_sided = one_sided;
  }
  const Deadline p = patience(d);
  return settle(went_through(one_sided ? run_tagged(batch, p) : run_sized(batch, p, true), batch));
}

Status Rail::run_signed(std::span<Transfer> batch, uint64_t tag, const Deadline& d) {
  for (Transfer& t : batch) {
    // After a failure, this call's transfers say so, and its sends carry nothing (fail_call()).
    t.tag = tag | failed_bit();
    // A message of another call or batch lands, and is reported as such. Batches whose hosts
    // take part unevenly (recursive doubling's rounds against another call's one round) would
    // otherwise leave the other call's message unmatched and both sides waiting for their
    // deadlines. Matching stays right without the number: a peer sends us at most one rail
    // message per batch, and the provider delivers one sender's messages in order. The same
    // holds for a world batch's message (exchange(), exchange_even()), which lands too
    // (kRailOrWorld): a call whose messages go along the rails against one whose messages form a
    // world batch (an allreduce against an alltoall) is named at once, where neither side's
    // receives would meet the other's messages before the deadline.
    t.ignore = kCallMask | kBatchMask | kRailOrWorld;
  }
  return run_tagged(batch, d);
}

Status Rail::run_sized(std::span<Transfer> batch, const Deadline& d, bool symmetric) {
  // Each receive tells its sender how many bytes it expects, and each send hears it: so a sender
  // learns of a size mismatch as its receiver does, and both fail the call with sclInvalidUsage,
  // as on one host. In a collective's batch where this rank also sends to that peer (alltoallv:
  // always), the word rides at the head of that message (Transfer::header), so it costs nothing
  // more: the peer's batch has the same pairs, so both ends agree on which messages carry one.
  // Otherwise (point-to-point, whose batches each rank groups as it likes; gather, scatter) it is
  // an 8-byte message of its own beside the data (no round trip before it).
  // A message shorter than its receive completes it, and the communicator goes on; a longer one
  // is truncated, which the endpoint does not survive (Endpoint::reap).
  const bool headers = symmetric && ep_->carries_headers();
  std::vector<Transfer> all(batch.begin(), batch.end());
  std::vector<uint64_t> told(batch.size()), heard(batch.size());
  std::vector<size_t> partner(batch.size(), SIZE_MAX);  // the other direction with the same peer
  std::vector<size_t> word(batch.size(), SIZE_MAX);     // the index in `all` of a size word's own
  for (size_t i = 0; headers && i < batch.size(); ++i) {
    for (size_t j = 0; j < batch.size() && partner[i] == SIZE_MAX; ++j) {
      if (batch[j].peer == batch[i].peer && batch[j].send != batch[i].send &&
          partner[j] == SIZE_MAX) {
        partner[i] = j, partner[j] = i;
      }
    }
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    const Transfer& t = batch[i];
    told[i] = t.bytes;
    if (partner[i] != SIZE_MAX) {
      // A send carries what its partner receive expects; a receive hears its partner send's.
      all[i].header = t.send ? &told[partner[i]] : &heard[partner[i]];
      continue;
    }
    Transfer e = t.send ? recv_from(t.peer, &heard[i], sizeof heard[i])
                        : send_to(t.peer, &told[i], sizeof told[i]);
    e.tag = kSizeTags | (t.tag & (kTagMask | kFailedTag));
    // A word meets the words of its own batch only (point-to-point's are in the same space).
    e.ignore = t.ignore & ~(kWorldTags | kKindTags | kBatchMask);
    word[i] = all.size();
    all.push_back(e);
  }
  Status s = run_tagged(all, d);
  bool void_call = !batch.empty() && (batch[0].tag & kFailedTag) != 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i].done = all[i].done;
    // A peer whose call failed says so in its data's message or its size word.
    batch[i].peer_failed = all[i].peer_failed || (word[i] != SIZE_MAX && all[word[i]].peer_failed);
    void_call |= batch[i].peer_failed;
  }
  // Where either end's call failed, the words are not this call's sizes: the failure is the news.
  if (!s.ok() || void_call) return s;
  for (size_t i = 0; i < batch.size(); ++i) {
    const Transfer& t = batch[i];
    if (t.send && heard[i] != t.bytes) {
      return Errorf(sclInvalidUsage, "%s expects %llu bytes where this rank sends it %zu",
                    who(t.peer).c_str(), static_cast<unsigned long long>(heard[i]), t.bytes);
    }
  }
  return Status::Ok();
}

Status Rail::point_to_point(std::span<Transfer> batch, const Deadline& d) {
  const size_t n = size_t(topo_.hosts * topo_.per_host);
  sent_.resize(n), received_.resize(n);
  for (Transfer& t : batch) {
    uint64_t& k = (t.send ? sent_ : received_)[size_t(t.peer)];
    t.tag = kP2PTags | (++k & kTagMask);
  }
  return run_sized(batch, d, false);
}

Result<char*> Rail::scratch(size_t bytes) {
  if (scratch_bytes_ >= bytes) return scratch_;
  release_scratch();
  SCL_ASSIGN_OR_RETURN(auto* heap, Heap::instance());
  SCL_ASSIGN_OR_RETURN(void* p, heap->allocate(bytes));
  scratch_ = static_cast<char*>(p), scratch_bytes_ = bytes;
  return scratch_;
}

void Rail::release_scratch() {
  if (scratch_) (void)(*Heap::instance())->release(scratch_);
  scratch_ = nullptr, scratch_bytes_ = 0;
}

// Once the call has failed (fail_call(), or a peer said so), the operations below reduce nothing
// into the caller's buffers: what a failed peer sent is not data.

Status Rail::allreduce(const char* in, char* buf, size_t count, sclDataType_t dt, sclRedOp_t op,
                       const Deadline& d) {
  const int H = topo_.hosts;
  const size_t es = dtype_size(dt);
  if (H == 1) {
    if (in != buf && count > 0) std::memcpy(buf, in, count * es);
    return Status::Ok();
  }
  // A call of no elements still crosses: its empty messages carry the call in their tags, so a
  // host whose count differs fails the call here as it would with any other count.
  if (count == 0) return settle(allreduce_direct(in, buf, count, dt, op, d));
  if (count * es <= kDirectMaxBytes) {
    if (doubling(H)) {
      return settle(allreduce_doubling(in, buf, count, dt, op, d));
    }
    // Bruck's rounds gather the H inputs, which one direct round takes in at once: up to 64 KiB
    // in all, as the allgather's rounds (at 6 hosts here 0.69-1.01x the time up to 3 KiB, but
    // 1.18x at 48 KiB).
    if (small_in_rounds(count * es)) {
      return settle(allreduce_in_rounds(in, buf, count, dt, op, d));
    }
    if (rounds(H) && allreduce_halves_pay(H, topo_.per_host, count * es)) {
      return settle(allreduce_in_halves(in, buf, count, dt, op, d));
    }
    return settle(allreduce_direct(in, buf, count, dt, op, d));
  }
  const Chunks ch{buf, count, es, H};
  // ch.bytes(0) is the smallest chunk: the same on every rank, so every rank chooses alike.
  if (H >= kScatterGatherMinHosts && size_t(H - 1) * ch.bytes(0) <= kScatterGatherMaxRoundBytes) {
    return settle(allreduce_scatter_gather(in, ch, dt, op, d));
  }
  return settle(allreduce_ring(in, ch, dt, op, d));
}

Status Rail::allreduce_ring(const char* in, const Chunks& ch, sclDataType_t dt, sclRedOp_t op,
                            const Deadline& d) {
  const int H = topo_.hosts, h = topo_.host;
  const size_t es = ch.es;
  auto input = [&](int c) { return in + ch.first(c) * es; };
  const int next = peer((h + 1) % H), prev = peer((h + H - 1) % H);
  SCL_ASSIGN_OR_RETURN(char* tmp, scratch(ch.bytes(H - 1) + es));
  const bool os = one_sided(ch.bytes(0));  // the smallest chunk: the same on every rank
  // Reduce-scatter: after step s, chunk (h - s - 1) holds the sum over s + 2 hosts.
  // The first step sends our own input's chunk; each chunk that comes in is reduced with ours
  // from the input into the output, and goes on from there.
  for (int s = 0; s + 1 < H; ++s) {
    const int out = (h - s + H) % H, got = (h - s - 1 + H) % H;
    Transfer batch[2] = {send_to(next, s == 0 ? input(out) : ch.at(out), ch.bytes(out)),
                         recv_from(prev, tmp, ch.bytes(got))};
    SCL_TRY(run(batch, d, os));
    const void* srcs[2] = {input(got), tmp};
    if (failure_.ok()) reduce::reduce_n(ch.at(got), srcs, 2, ch.bytes(got) / es, dt, op, 1);
  }
  // Allgather: host h owns chunk (h + 1) in full; pass finished chunks along the ring.
  for (int s = 0; s + 1 < H; ++s) {
    const int out = (h + 1 - s + H) % H, got = (h - s + H) % H;
    Transfer batch[2] = {send_to(next, ch.at(out), ch.bytes(out)),
                         recv_from(prev, ch.at(got), ch.bytes(got))};
    SCL_TRY(run(batch, d, os));
  }
  return Status::Ok();
}

Status Rail::allreduce_scatter_gather(const char* input, const Chunks& ch, sclDataType_t dt,
                                      sclRedOp_t op, const Deadline& d) {
  // Host h reduces chunk h (the ring's chunks), in host order, from every host's copy, then
  // sends the result to every host: each chunk's bits come from one host, so all agree.
  const int H = topo_.hosts, me = topo_.host;
  const size_t mine = ch.bytes(me);
  SCL_ASSIGN_OR_RETURN(char* in, scratch(mine * size_t(H)));
  const bool os = one_sided(ch.bytes(0), H - 1);
  std::vector<Transfer> batch;
  for (int h = 0; h < H; ++h) {
    if (h == me) continue;
    batch.push_back(send_to(peer(h), input + ch.first(h) * ch.es, ch.bytes(h)));
    batch.push_back(recv_from(peer(h), in + size_t(h) * mine, mine));
  }
  SCL_TRY(run(batch, d, os));
  std::vector<const void*> srcs;
  for (int h = 0; h < H; ++h) {
    srcs.push_back(h == me ? input + ch.first(me) * ch.es : in + size_t(h) * mine);
  }
  if (failure_.ok()) reduce::reduce_n(ch.at(me), srcs.data(), H, mine / ch.es, dt, op, 1);
  batch.clear();
  for (int h = 0; h < H; ++h) {
    if (h == me) continue;
    batch.push_back(send_to(peer(h), ch.at(me), mine));
    batch.push_back(recv_from(peer(h), ch.at(h), ch.bytes(h)));
  }
  return run(batch, d, os);
}

Status Rail::allreduce_direct(const char* in, char* buf, size_t count, sclDataType_t dt,
                              sclRedOp_t op, const Deadline& d) {
  // A reduce-scatter whose every part is the whole input: each host sends it to every other and
  // reduces all of them, in host order, into the output.
  const std::vector<const char*> parts(size_t(topo_.hosts), in);
  return reduce_scatter_direct(parts, buf, count, dt, op, d);
}

Status Rail::allreduce_doubling(const char* input, char* buf, size_t count, sclDataType_t dt,
                                sclRedOp_t op, const Deadline& d) {
  // After the round of `mask`, each host holds the reduction over its group of 2 * mask hosts.
  // Both ends of an exchange put the lower host's value first, so they compute the same bits
  // (max and min keep the earlier of ties).
  const int H = topo_.hosts, me = topo_.host;
  const size_t bytes = count * dtype_size(dt);
  SCL_ASSIGN_OR_RETURN(char* in, scratch(bytes));
  const bool os = one_sided(bytes);
  const char* mine = input;  // the first round's; the output from there
  for (int mask = 1; mask < H; mask *= 2, mine = buf) {
    const int partner = me ^ mask;
    Transfer batch[2] = {send_to(peer(partner), mine, bytes), recv_from(peer(partner), in, bytes)};
    SCL_TRY(run(batch, d, os));
    const void* srcs[2] = {partner < me ? in : mine, partner < me ? mine : in};
    if (failure_.ok()) reduce::reduce_n(buf, srcs, 2, count, dt, op, 1);
  }
  return Status::Ok();
}

Status Rail::allgather(std::span<char* const> blocks, size_t bytes, const Deadline& d) {
  if (small_in_rounds(bytes)) {
    return settle(doubling(topo_.hosts) ? allgather_doubling(blocks, bytes, d)
                                        : allgather_in_rounds(blocks, bytes, d));
  }
  std::vector<Transfer> batch;
  for (int h = 0; h < topo_.hosts; ++h) {
    if (h == topo_.host) continue;
    batch.push_back(send_to(peer(h), blocks[size_t(topo_.host)], bytes));
    batch.push_back(recv_from(peer(h), blocks[size_t(h)], bytes));
  }
  return settle(run(batch, d, one_sided(bytes, topo_.hosts - 1)));
}

Status Rail::allgather_doubling(std::span<char* const> blocks, size_t bytes, const Deadline& d) {
  // The blocks gather in host order in a scratch buffer: after the round of `mask`, each host
  // holds the 2 * mask blocks of its group, contiguous from the group's first host, and sends
  // its half of them to its partner in one message. Then they are copied out to `blocks`.
  const int H = topo_.hosts, me = topo_.host;
  SCL_ASSIGN_OR_RETURN(char* all, scratch(bytes * size_t(H)));
  std::memcpy(all + size_t(me) * bytes, blocks[size_t(me)], bytes);
  const bool os = one_sided(bytes);  // the block size: the same on every rank
  for (int mask = 1; mask < H; mask *= 2) {
    const int partner = me ^ mask, mine = me & ~(mask - 1), theirs = partner & ~(mask - 1);
    const size_t part = size_t(mask) * bytes;
    Transfer batch[2] = {send_to(peer(partner), all + size_t(mine) * bytes, part),
                         recv_from(peer(partner), all + size_t(theirs) * bytes, part)};
    SCL_TRY(run(batch, d, os));
  }
  if (!failure_.ok()) return Status::Ok();  // what a failed peer sent is not data
  for (int h = 0; h < H; ++h) {
    if (h != me) std::memcpy(blocks[size_t(h)], all + size_t(h) * bytes, bytes);
  }
  return Status::Ok();
}

Status Rail::reduce_scatter(std::span<const char* const> parts, char* out, size_t count,
                            sclDataType_t dt, sclRedOp_t op, const Deadline& d) {
  if (reduce_scatter_takes_rounds(count, dt)) {
    return settle(reduce_scatter_in_rounds(parts, out, count, dt, op, d));
  }
  return settle(reduce_scatter_direct(parts, out, count, dt, op, d));
}

Status Rail::reduce_scatter_direct(std::span<const char* const> parts, char* out, size_t count,
                                   sclDataType_t dt, sclRedOp_t op, const Deadline& d) {
  const int H = topo_.hosts, me = topo_.host;
  const size_t bytes = count * dtype_size(dt);
  SCL_ASSIGN_OR_RETURN(char* in, scratch(bytes * size_t(H)));
  std::vector<Transfer> batch;
  for (int h = 0; h < H; ++h) {
    if (h == me) continue;
    batch.push_back(send_to(peer(h), parts[size_t(h)], bytes));
    batch.push_back(recv_from(peer(h), in + size_t(h) * bytes, bytes));
  }
  SCL_TRY(run(batch, d, one_sided(bytes, H - 1)));
  std::vector<const void*> srcs;
  for (int h = 0; h < H; ++h) srcs.push_back(h == me ? parts[size_t(me)] : in + size_t(h) * bytes);
  if (failure_.ok()) reduce::reduce_n(out, srcs.data(), H, count, dt, op, 1);
  return Status::Ok();
}

Status Rail::reduce(const char* mine, char* out, size_t count, sclDataType_t dt, sclRedOp_t op,
                    int root, const Deadline& d) {
  const int H = topo_.hosts;
  const size_t bytes = count * dtype_size(dt);
  const bool os = one_sided(bytes, H - 1);  // the root takes H - 1 at once
  if (topo_.host != root) {
    Transfer t = send_to(peer(root), mine, bytes);
    SCL_TRY(run(std::span(&t, 1), d, os));
    if (paced()) SCL_TRY(answer({}, std::span(&root, 1), d));
    return settle(Status::Ok());
  }
  SCL_ASSIGN_OR_RETURN(char* in, scratch(bytes * size_t(H)));
  std::vector<Transfer> batch;
  std::vector<int> heard_from;  // where paced(): the answers go to every other host
  for (int h = 0; h < H; ++h) {
    if (h == root) continue;
    batch.push_back(recv_from(peer(h), in + size_t(h) * bytes, bytes));
    if (paced()) heard_from.push_back(h);
  }
  SCL_TRY(run(batch, d, os));
  if (paced()) SCL_TRY(answer(heard_from, {}, d));
  std::vector<const void*> srcs;
  for (int h = 0; h < H; ++h) srcs.push_back(h == root ? mine : in + size_t(h) * bytes);
  if (failure_.ok()) reduce::reduce_n(out, srcs.data(), H, count, dt, op, 1);
  return settle(Status::Ok());
}

Status Rail::barrier(const Deadline& d) {
  const int64_t H = topo_.hosts, h = topo_.host, k = tree_radix(0);
  std::vector<Transfer> batch;
  // The distances m k^j (0 < m < k) are all different below H: a peer sends us at most one
  // message in a barrier.
  for (int64_t span = 1; span < H; span *= k) {
    batch.clear();
    for (int64_t far = span; far < std::min(H, k * span); far += span) {
      batch.push_back(send_to(peer(int((h + far) % H)), nullptr, 0));
      batch.push_back(recv_from(peer(int((h - far + H) % H)), nullptr, 0));
    }
    SCL_TRY(run(batch, d, false));
  }
  return settle(Status::Ok());
}

}  // namespace stratacl::net
