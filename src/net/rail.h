// A rail: the ranks with our local index on every host (one per host). The hierarchical
// algorithms (src/hier) move data between hosts only along rails, so every local rank drives
// its own share of the inter-host traffic in parallel. Each operation here is one inter-host
// algorithm over the rail's endpoint; every rank of the rail calls the same ones in the same
// order, and each batch gets a fresh tag; a message of another call or batch that lands in a
// receive is reported as a mismatch, never taken for this call's data.
// Transfers from one_sided()'s size on (set_one_sided_min()'s, or less where a rank takes
// transfers from many ranks at once) are written one-sided into the receiver's registered buffer
// (net/one_sided.cc); exchange() and point_to_point() stay messages, as the two ends of their
// transfers may disagree on sizes (exchange_even()'s, whose sizes agree, need not).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "net/endpoint.h"
#include "net/topology.h"
#include "stratacl/stratacl.h"

namespace stratacl::net {

class Rail {
 public:
  // Largest allreduce done in one direct round (below).
  static constexpr size_t kDirectMaxBytes = 64 << 10;
  // Above it, from kScatterGatherMinHosts hosts on and while a round of H - 1 chunks (the
  // buffer over H; the smallest) brings a rank at most kScatterGatherMaxRoundBytes, the allreduce
  // scatters and gathers in two rounds instead of the ring's 2(H - 1): the rounds' latency is
  // most of such a call. Beyond, the ring's one stream in per rank was often faster here: at 6
  // hosts a 256 KiB call (213 KiB in per round) took 1.2-1.4x the ring's time, 128 KiB chunks
  // from 3 hosts often more, though one-sided 256 KiB chunks gained (docs/PERFORMANCE.md,
  // "Allreduce in two rounds from four hosts").
  static constexpr int kScatterGatherMinHosts = 4;
  static constexpr size_t kScatterGatherMaxRoundBytes = 192 << 10;
  // A broadcast goes down a chain of hosts from the root in segments, each host passing one on
  // while the next comes in, where that costs less than the flat one's H - 1 copies from the
  // root or, from kTreeMinHosts, the binomial tree's rounds (chain_segments()). The fixed cost of a
  // message (its latency, a clear-to-send's round trip, a batch's progress calls), as the bytes a
  // link moves meanwhile (α·β): 128 KiB, between 100 Gb/s RDMA's (about 60 KB: 5 µs at 12.5 GB/s)
  // and 400 Gb/s's (about 250 KB). The choice is not sharp there: S is a square root, and the cost
  // near its least is flat.
  static constexpr size_t kChainBytesPerMessageCost = 128 << 10;
  static constexpr int kChainMaxSegments = 1024;
  // The chain's segment count for a broadcast of `bytes` over `hosts` hosts, or 0 where the tree
  // of hosts of `radix` costs less (radix H: the flat broadcast): above 512 KiB at 3 hosts (flat),
  // 1 MiB at 4 and 640 KiB at 6 (the binomial tree).
  static int chain_segments(int hosts, size_t bytes, int radix);
  // From kTreeMinHosts hosts, a broadcast that does not go down the chain and a barrier go in
  // rounds over a tree of hosts of radix k, ceil(log_k H) rounds (below, k = H: one round).
  // Radix 2 for broadcasts of more than kWideTreeMaxBytes (what rxm over tcp injects), whose
  // copies cost a sender most of a round; set_small_tree_radix() for smaller broadcasts and
  // barriers, which a fabric whose sends cost a sender little beside a round's latency may want
  // wider (docs/PERFORMANCE.md, "Broadcasts and barriers in rounds over trees of hosts").
  static constexpr int kTreeMinHosts = 4;
  static constexpr size_t kWideTreeMaxBytes = 64;
  static int tree_rounds(int hosts, int radix);  // ceil(log_radix hosts)
  // `call_name` names a call kind of begin() in errors.
  Rail(std::unique_ptr<Endpoint> ep, Topology topo, StopCheck stop,
       const char* (*call_name)(uint32_t kind));
  ~Rail();
  Rail(const Rail&) = delete;
  Rail& operator=(const Rail&) = delete;
  const Topology& topology() const { return topo_; }
  const Endpoint& endpoint() const { return *ep_; }
  // From `hosts` hosts on, small allreduces and allgathers go in rounds, by recursive doubling
  // where the host count is a power of two and by Bruck's algorithm at other counts (allreduce()
  // and allgather() say up to which size), and so do small reduce-scatters (reduce_scatter())
  // and alltoalls of small blocks (alltoall_in_rounds()); -1: never; at first, never. Every rank
  // must set the same.
  void set_doubling_min_hosts(int hosts) { doubling_min_hosts_ = hosts; }
  // The radix of the trees of small broadcasts and barriers (at first, 2). Every rank must set
  // the same.
  void set_small_tree_radix(int radix) { small_tree_radix_ = std::max(radix, 2); }
  // How many copies of its buffer a host's rail sends in an allreduce up to kDirectMaxBytes:
  // one per round of recursive doubling, or one to each other host (the direct round, and
  // Bruck's rounds, which float max and min take where doubling would apply: counted as
  // doubling here). The halves (allreduce()) send about two copies' bytes; counted as the direct
  // round's here, as the size that picks them is not known yet.
  int small_allreduce_copies() const {
    return doubling(topo_.hosts) ? log2_rounds(topo_.hosts) : topo_.hosts - 1;
  }
  // Rail transfers, and exchange_even()'s, of at least `bytes` (less where many send:
  // one_sided_at()) go one-sided from now on (-1: none; at first, none). Every rank of the
  // communicator must set the same value at the same point: the owner agrees on it.
  void set_one_sided_min(int64_t bytes) { one_sided_min_ = ep_->writes() ? bytes : -1; }
  // Before the rail goes: lets small sends the provider still holds leave (Endpoint::flush).
  void flush() { ep_->flush(kFlushNs); }
  static constexpr int64_t kFlushNs = 10 * 1000 * 1000;
  std::string who(int world) const;  // "rank 3 (host 1)", "(node 1)" where cut

  // The call the following batches belong to: every rank calls it with the same values before
  // the same call, whether or not the call reaches the rail on its host. Its kind (< 16), a hash
  // of its arguments and its number travel in every message's tag, so a message from a rank in
  // another call is an error naming the rank and both calls (as the step protocol's signature
  // check does within a host), never data taken for this call's.
  // Point-to-point messages carry none: sizes are what they check.
  void begin(uint32_t kind, uint64_t args);
  // A call that will not run here (a group's call after one that failed): counted as begin()
  // counts it, so that the next call's number stays what the other hosts' next call carries.
  void skip_call() { ++calls_; }
  // The call failed on this host before (some of) its rail operations: a step among the host's
  // ranks found their calls mismatched. Its rail operations still run, batch for batch, but every
  // transfer says the call failed (net::kFailedTag): sends carry no data, one-sided receives
  // take none, and a message into a receive lands as usual.
  // A rank that receives such a message fails the call with sclInvalidUsage naming the sender,
  // and its own later sends in the call say so too (as after a batch that failed without ending
  // the endpoint, a size mismatch): so every host ends the call, with an error wherever a rank
  // depends on the failed host's data, and the next call finds the hosts in step. Every
  // operation of the call returns an error on this rank from here. Where this rank's own call
  // differs from its rail peers' in shape (another root, another collective), they may take no
  // part: its batches wait at most kFailedCallPatienceMs each, then end the endpoint. Its
  // receives keep their size: a peer's message longer than one (this rank's count the smaller)
  // is truncated, which tcp does not survive, and the endpoint ends too.
  void fail_call();
  static constexpr int64_t kFailedCallPatienceMs = 5000;
  // Says that the caller's algorithm goes on through a failure its rail operations report
  // (hier::Context::rail_step), its own local steps included: for the rest of the call, a void
  // message from a peer whose call differs from ours in kind or arguments fails the call (the
  // failed call's arguments may be the mismatched ones) instead of ending the endpoint. Any
  // other caller would return at the failure and leave its host's ranks in a local step it
  // skipped, so there the difference still ends the endpoint and the communicator.
  void go_on_through_failures();

  // Every host ends with the reduction over hosts of its `count` elements at `in` in `buf`,
  // identical bits everywhere (`in` may be `buf`; else they do not overlap, and `in` is only
  // read: no copy into `buf` first). Up to kDirectMaxBytes, one round: every host sends its input
  // to every other and reduces all of them in host order; or, from set_doubling_min_hosts() hosts
  // where H is a power of two, recursive doubling: log2 H rounds of one message each way, where the
  // direct round posts 2(H-1) messages (each pair reduces the lower host's value first, so every
  // host ends with the same bits, though not in host order); at other host counts from there
  // while the H inputs total at most kDirectMaxBytes, Bruck's gather
  // of every input in ceil(log2 H) rounds, the direct round's bytes, then the direct round's
  // reduction in host order; past that, where allreduce_halves_pay(), in halves: reduce_scatter()'s
  // rounds over the ring's chunks, then Bruck's gather of the chunks, each reduced once on its
  // host. Above, ring reduce-scatter then ring allgather (each chunk reduced in ring order), which
  // moves 2(H-1)/H of the buffer per host instead of H-1; or, from kScatterGatherMinHosts hosts
  // while H - 1 chunks are at most kScatterGatherMaxRoundBytes, the same bytes in two rounds: every
  // host sends chunk h to host h, which reduces the H copies in host order and sends the result to
  // every host. op is sum, prod, max or min: averages divide afterwards. A count of 0 takes the
  // direct round of empty messages, which carry the call, so a host whose count differs fails.
  Status allreduce(const char* in, char* buf, size_t count, sclDataType_t dt, sclRedOp_t op,
                   const Deadline& d);
  // Where every rank of a host holds the host's messages for the other hosts (`bytes` each, host
  // g's at mine + g x `stride`; stride 0: one message for every host), each rail carries a share
  // of them: host g's goes to g where g is `first`, first + `step`, ... hosts on from ours (below
  // H), and the message of the host as far back lands in `from`, one after another
  // (ceil((H - first) / step) at most; none where first >= H). One direct round. Every rank of the
  // rail passes the same first and step, so that the batches pair up. The hierarchical allreduce
  // and reduce-scatter give local rank l first l + 1 and step L: one message between each pair
  // of hosts instead of L (hier/spread.h).
  Status share(const char* mine, size_t stride, size_t bytes, char* from, int first, int step,
               const Deadline& d);
  // Block `h` of every host h: blocks[h] (bytes each) is ours to send when h is our host and is
  // filled from host h's rail peer otherwise. One direct round (a message to and from every
  // host); or, from set_doubling_min_hosts() hosts while the H blocks total at most
  // kDirectMaxBytes, rounds of one message each way (log2 H by recursive doubling at a power of
  // two, else ceil(log2 H) by Bruck's algorithm), gathered in a scratch buffer and copied out.
  Status allgather(std::span<char* const> blocks, size_t bytes, const Deadline& d);
  // Where alltoall_in_rounds(bytes): send[h] (bytes) goes to host h's rail peer, whose block for
  // this host lands in recv[h], for every other host h, by Bruck's algorithm: ceil(log2 H)
  // rounds of one message each way (about H / 2 blocks each) instead of H - 1 messages. The
  // blocks move through the rail's scratch and are copied out at the end (not where the call
  // failed). send[host] and recv[host] are not touched.
  Status alltoall(std::span<const char* const> send, std::span<char* const> recv, size_t bytes,
                  const Deadline& d);
  // Whether an alltoall of `bytes` blocks (1 or more) goes in rounds: from
  // set_doubling_min_hosts() hosts, where alltoall_rounds_pay(). Every rank decides alike.
  bool alltoall_in_rounds(size_t bytes) const;
  // Whether the messages the rounds save cost more than the blocks they send again (about
  // H log2(H) / 2 slots against H - 1), a message weighing kAlltoallBytesPerMessageCost bytes
  // of the host's link, which its L rails share: at 4 hosts while L x bytes is below it, at 8
  // below 0.8 of it, at 48 below half; never at 2 and 3 hosts.
  static bool alltoall_rounds_pay(int hosts, int per_host, size_t bytes);
  // At 4 hosts of one rank here the rounds took 0.75-0.92x the time of one direct round at the
  // smallest blocks, about the same from 1 KiB to 4 KiB, and 1.05-1.14x at 8-16 KiB
  // (docs/PERFORMANCE.md, "Small calls in rounds at any host count").
  static constexpr size_t kAlltoallBytesPerMessageCost = 6 << 10;
  // Whether a rail allreduce of `bytes` (at most kDirectMaxBytes, past the gather's rounds)
  // goes in halves, the reduce-scatter's rounds then the gather's (2 ceil(log2 H) messages each
  // way, 2 (H - 1) / H of the buffer), rather than in the direct round (2 (H - 1) messages, the
  // buffer H - 1 times): where the bytes saved, L rails' through the host's link, outweigh the
  // messages added, a message weighing kHalvesBytesPerMessageCost bytes and a round three
  // messages (its latency, a send and a receive): at 5 hosts of one rank above 61,440 bytes, at
  // 6 above 34,406, at 7 above 19,114, from 13 hosts always; at 2 and 3 never.
  static bool allreduce_halves_pay(int hosts, int per_host, size_t bytes);
  // At 6 hosts of one rank here the halves took 1.04-1.37x the direct round's time up to 32 KiB
  // and 0.77-0.87x from 48 KiB; at 5, 1.38-1.53x up to 32 KiB and 0.94-1.00x at 64 KiB: a round
  // costs much where 5 or 6 ranks share 2 cores (docs/PERFORMANCE.md, "Allreduce in halves").
  static constexpr size_t kHalvesBytesPerMessageCost = 16 << 10;
  // Whether transfers of `bytes`, up to `senders` of them into a rank at once, go one-sided where
  // the threshold is `min` (-1: never): from `min`; from kManySenders senders on, from `min`
  // over their count (rounded up), where so many bytes would queue at the receiver, but not below
  // a quarter of `min`. At 4, 5 and 6 hosts of one rank here the direct rounds' eager transfers
  // from that size on (128 KiB from 3 senders, 64 KiB from 4) took 1.4-4.8x the time of
  // one-sided ones; below it, and with one or two senders at 128 KiB, a one-sided transfer's
  // clear-to-send cost up to 2x (docs/PERFORMANCE.md, "One-sided from less where many send").
  static bool one_sided_at(int64_t min, size_t bytes, int senders) {
    if (min < 0) return false;
    const auto over =
        uint64_t(senders >= kManySenders ? std::min(senders, kMostSendersCounted) : 1);
    return bytes >= (uint64_t(min) + over - 1) / over;
  }
  static constexpr int kManySenders = 3;
  static constexpr int kMostSendersCounted = 4;
  // Host `root`'s buf goes to every host's buf: down a tree of hosts (tree_radix()), where every
  // host that has the buffer sends it to k - 1 more in each round (radix H: from the root to every
  // host at once); or, where chain_segments() finds it cheaper (large buffers from 3 hosts), down
  // the chain of hosts from the root in segments, each host passing one on while the next comes
  // in. `host_bytes` (0: `bytes`) is what all the host's rails broadcast at once in this call,
  // each its block (a broadcast split over the rails): the chain and its segment count are
  // chosen from it, as the rails share the host's link, so that a batch puts as many bytes
  // through it as an unsplit chain's. Every rank of the rail passes the same. Paced (below).
  Status broadcast(char* buf, size_t bytes, int root, const Deadline& d, size_t host_bytes = 0);
  // parts[h]: our partial result for host h (ours: parts[host]). On return, out holds the
  // reduction over hosts of every host's part for us: in host order, from one direct round (a
  // message to and from every host); or, from set_doubling_min_hosts() hosts while the H parts
  // total at most kDirectMaxBytes, by Bruck's
  // rounds: ceil(log2 H) rounds of one message each way and the direct round's bytes, each part
  // reduced on its way in a fixed order of its own. `out` may be parts[host]; it is written only
  // where the call went through.
  Status reduce_scatter(std::span<const char* const> parts, char* out, size_t count,
                        sclDataType_t dt, sclRedOp_t op, const Deadline& d);
  // Whether reduce_scatter() of `count` elements a host takes Bruck's rounds (alike on every rank).
  bool reduce_scatter_takes_rounds(size_t count, sclDataType_t dt) const;
  // Host `root` ends with the reduction, in host order, of every host's `mine` in `out`. Paced.
  Status reduce(const char* mine, char* out, size_t count, sclDataType_t dt, sclRedOp_t op,
                int root, const Deadline& d);
  // broadcast() and reduce() are one-way: a sender hears nothing back from its receivers, so a
  // rank calling them back to back would run ahead of its receivers without bound, every message
  // it is ahead held by the receiver's provider (rxm keeps each in a buffer of 16 KiB or more: a
  // loop of 200,000 8-byte broadcasts at 3 hosts grew ranks by up to 1794 MiB). So in every
  // set_pace_calls()-th call (begin()'s count, the same on every rank of the rail, whatever the
  // call's arguments) their receivers answer each of their senders with an empty message, which
  // the senders wait for: a loop of them keeps every rank within that many calls of the ranks it
  // sends to. Transfers that go one-sided wait for their receivers' clear-to-sends already, but
  // are paced alike, so that ranks whose calls differ in size still run the same batches.
  // kPaceCalls is prime, so that calls repeating in any shorter period still bring each of their
  // one-way calls to a paced count. Each period costs a round trip the pipeline drains in: at 3x1
  // here, back-to-back broadcasts of 8 B-4 KiB took 1.03-1.15x the time unpaced with 61 (31:
  // up to 1.24x), and 32 KiB reduces 1.22-1.35x (31: up to 1.53x); reduces of 8 B-4 KiB
  // 0.16-0.80x, as the root's provider no longer piles up the senders' messages
  // (docs/PERFORMANCE.md, "One-way calls paced").
  static constexpr uint64_t kPaceCalls = 61;
  void set_pace_calls(uint64_t calls) { pace_calls_ = std::max<uint64_t>(calls, 1); }
  // Returns when every host's rail peer has called it, by dissemination over tree_radix(0): in
  // round j, every host sends to the k - 1 hosts m k^j on (m < k) and hears from those as far
  // back, so that after it a host has heard, directly or through the hosts it heard, from the
  // k^(j+1) - 1 hosts behind it (radix H: one round, a message to and from every host).
  Status barrier(const Deadline& d);

  // Beyond the rail: transfers with any rank (Transfer::peer is a world rank). Every rank of
  // the communicator calls exchange() once per collective that uses it, with an empty batch if
  // it has nothing to move, so that all ranks number these batches alike. In a failed call
  // (fail_call()) it runs void as a rail batch does: a send carries no data (only the size word
  // where that rides in its header), a size word of its own goes void too, and the size checks
  // give way to the failure.
  Status exchange(std::span<Transfer> batch, const Deadline& d) {
    return world_batch(batch, d, false);
  }
  // exchange() of a batch whose every transfer moves `bytes`, on every rank (alltoall, gather,
  // scatter: the call's signature holds the size), with at most one transfer per peer and
  // direction (one-sided writes land by sender and tag, net/one_sided.cc). Both ends of each
  // transfer know its size, so from one_sided()'s size on the batch goes one-sided, as a rail
  // batch does, instead of by the provider's eager or rendezvous protocol; below, it is
  // exchange(). `senders`: the most ranks any rank takes a transfer from in the batch, alike on
  // every rank. Every rank calls one of the two for such a call, so the numbering holds.
  Status exchange_even(std::span<Transfer> batch, size_t bytes, int senders, const Deadline& d) {
    return world_batch(batch, d, one_sided(bytes, senders));
  }
  // Point-to-point: the k-th send from a to b matches b's k-th receive from a (NCCL's order).
  Status point_to_point(std::span<Transfer> batch, const Deadline& d);
  static Transfer send_to(int peer, const void* buf, size_t bytes);
  static Transfer recv_from(int peer, void* buf, size_t bytes);

 private:
  int peer(int h) const { return topo_.world_of(h, topo_.local); }
  Status allreduce_direct(const char* in, char* buf, size_t count, sclDataType_t dt, sclRedOp_t op,
                          const Deadline& d);
  Status reduce_scatter_direct(std::span<const char* const> parts, char* out, size_t count,
                               sclDataType_t dt, sclRedOp_t op, const Deadline& d);
  struct Chunks;  // the split of a buffer into H chunks (net/rail_chunks.h)
  // `in`: the input, laid out as `chunks` (chunks.buf, the output, where in place).
  Status allreduce_scatter_gather(const char* in, const Chunks& chunks, sclDataType_t dt,
                                  sclRedOp_t op, const Deadline& d);
  Status allreduce_ring(const char* in, const Chunks& chunks, sclDataType_t dt, sclRedOp_t op,
                        const Deadline& d);
  // What an operation returns: `s`, or, where it went through, the call's failure, if any
  // (fail_call(), or a peer's message saying its call failed).
  Status settle(Status s) const;
  Status allreduce_doubling(const char* in, char* buf, size_t count, sclDataType_t dt,
                            sclRedOp_t op, const Deadline& d);
  Status allgather_doubling(std::span<char* const> blocks, size_t bytes, const Deadline& d);
  Status broadcast_chain(char* buf, size_t bytes, int root, int segments, const Deadline& d);
  // Whether this call's one-way operation ends with its receivers' answers (kPaceCalls).
  bool paced() const { return calls_ % pace_calls_ == 0; }
  // The answers: an empty message to each host of `heard_from` and from each of `sent_to`.
  Status answer(std::span<const int> heard_from, std::span<const int> sent_to, const Deadline& d);
  // The radix of a broadcast's tree of hosts for `bytes` a message, or of a barrier's (0).
  int tree_radix(size_t bytes) const {
    if (topo_.hosts < kTreeMinHosts) return topo_.hosts;
    return bytes <= kWideTreeMaxBytes ? small_tree_radix_ : 2;
  }
  int broadcast_segments(size_t bytes, size_t host_bytes) const;  // 0: the tree
  // Small calls in rounds of one message each way instead of one direct round: from
  // set_doubling_min_hosts() on.
  bool rounds(int hosts) const { return doubling_min_hosts_ >= 0 && hosts >= doubling_min_hosts_; }
  // Recursive doubling: where rounds() apply, for a power of two only; other counts take
  // Bruck's algorithms (net/rail_bruck.cc). Doubling at other counts would fold the hosts
  // beyond the power of two in and out, a first round in which some hosts only wait, so that a
  // mismatch between two reducing calls could wait out the deadline; here, as in Bruck's rounds,
  // every host's batch both sends and receives. Against a call whose hosts only receive from a
  // root (broadcast, reduce), a mismatch can still go unnamed until the call's deadline, which
  // then fails every rank with sclTimeout naming the rank waited for.
  bool doubling(int hosts) const { return rounds(hosts) && (hosts & (hosts - 1)) == 0; }
  // Whether a small allgather, allreduce or reduce-scatter of `block` bytes a host goes in
  // rounds: from set_doubling_min_hosts() hosts while the H blocks total at most kDirectMaxBytes
  // (empty ones keep the direct round: its zero-byte messages still check the call, and no
  // scratch is needed).
  bool small_in_rounds(size_t block) const {
    return block > 0 && rounds(topo_.hosts) && block * size_t(topo_.hosts) <= kDirectMaxBytes;
  }
  // ceil(log2 H): the rounds of Bruck's algorithms and of recursive doubling.
  static int log2_rounds(int hosts) { return std::bit_width(unsigned(hosts - 1)); }
  // Bruck's gather, in ceil(log2 H) rounds: every host's `bytes` block lands in the rail's
  // scratch, whose address it returns, host me - i's at i * bytes.
  Result<char*> gather_in_rounds(const char* mine, size_t bytes, const Deadline& d);
  // Its rounds: all[0] holds our block, and host me - i's lands at all + i * stride (blocks
  // shorter than `stride` carry what follows them in `all` along).
  Status gather_rounds(char* all, size_t stride, const Deadline& d);
  Status allgather_in_rounds(std::span<char* const> blocks, size_t bytes, const Deadline& d);
  Status allreduce_in_rounds(const char* in, char* buf, size_t count, sclDataType_t dt,
                             sclRedOp_t op, const Deadline& d);
  Status reduce_scatter_in_rounds(std::span<const char* const> parts, char* out, size_t count,
                                  sclDataType_t dt, sclRedOp_t op, const Deadline& d);
  // Its rounds, where the part for host h is ch.bytes(h) long; `work` holds 2 H of the longest
  // part. `out` is written in the last round only.
  Status reduce_scatter_rounds(std::span<const char* const> parts, char* out, const Chunks& ch,
                               sclDataType_t dt, sclRedOp_t op, const Deadline& d, char* work);
  // The reduce-scatter's rounds over the chunks of the buffer, then the gather's.
  Status allreduce_in_halves(const char* in, char* buf, size_t count, sclDataType_t dt,
                             sclRedOp_t op, const Deadline& d);
  // Runs a batch of messages whose sizes the two ends could disagree on, checking them on both
  // ends (a mismatch is sclInvalidUsage for sender and receiver). With `symmetric`, the peers'
  // batches are built alike from the call (a collective's), so both ends of a pair carry the
  // check in their data alike; point-to-point batches are grouped as each rank chose. Where
  // either end's call failed (the batch void, or a peer's message or word saying so), the words
  // are not checked: Transfer::peer_failed says which peer's call failed.
  Status run_sized(std::span<Transfer> batch, const Deadline& d, bool symmetric);
  // kFailedTag where the call has failed (fail_call(), or a peer said so), else 0.
  uint64_t failed_bit() const { return failure_.ok() ? 0 : kFailedTag; }
  // The deadline of a batch: `d`, or, where the call failed here, kFailedCallPatienceMs from now.
  Deadline patience(const Deadline& d) const;
  // What a batch leaves the call with: a fatal error comes back; another (a message shorter than
  // its receive) and a peer's word that its call failed become the call's failure (failure_).
  Status went_through(Status s, std::span<const Transfer> batch);
  // Runs a batch whose transfers already carry their tags.
  Status run_tagged(std::span<Transfer> batch, const Deadline& d);
  // A rail batch, its transfers one-sided or all messages.
  Status run(std::span<Transfer> batch, const Deadline& d, bool one_sided);
  // exchange()'s and exchange_even()'s batch: world tags, one-sided or messages with size words.
  Status world_batch(std::span<Transfer> batch, const Deadline& d, bool one_sided);
  // Whether an operation whose transfers are about `bytes` each goes one-sided: decided per
  // operation from a size every rank computes alike from the call's arguments (whose hash the
  // tags check), never per transfer, so that every batch holds one kind only. `senders`: the
  // most peers a rank takes transfers from at once in its batches (H - 1 in a direct round),
  // alike on every rank of the rail (of the communicator for exchange_even()) (one_sided_at()).
  bool one_sided(size_t bytes, int senders = 1) const {
    return one_sided_at(one_sided_min_, bytes, senders);
  }
  // Tags the batch with `tag` (its space, the call, its number) and runs it; receives match any
  // call, batch, kind of message and rail or world space of their peer, and compare them after.
  Status run_signed(std::span<Transfer> batch, uint64_t tag, const Deadline& d);
  // Received parts wait here: heap memory, so its registration is made once and kept.
  Result<char*> scratch(size_t bytes);
  void release_scratch();

  std::unique_ptr<Endpoint> ep_;
  Topology topo_;
  StopCheck stop_;
  const char* (*call_name_)(uint32_t kind);
  uint64_t call_ = 0;                      // begin()'s, placed in the tag
  Status failure_;                         // the call's, since begin() (fail_call())
  bool failed_here_ = false;               // fail_call() since begin()
  uint64_t calls_ = 0;                     // begin()s so far: every rank counts every call
  uint64_t tag_ = 0;                       // rail batches
  uint64_t world_tag_ = 0;                 // exchange() and exchange_even() batches
  std::vector<uint64_t> sent_, received_;  // point-to-point, per world rank
  char* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  // Rail transfers of at least this many bytes are one-sided (net/one_sided.cc); -1: none.
  int64_t one_sided_min_ = -1;
  int doubling_min_hosts_ = -1;       // set_doubling_min_hosts()
  int small_tree_radix_ = 2;          // set_small_tree_radix()
  uint64_t pace_calls_ = kPaceCalls;  // set_pace_calls()
};

}  // namespace stratacl::net
