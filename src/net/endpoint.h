// One libfabric reliable-datagram endpoint and its completion queue and address vector: the
// inter-host transport of one communicator. Peers are numbered by the caller (their index in
// connect()); messages are tagged, and the tag carries the sender's index, so no directed
// receive is needed.
//
// Progress is manual: run() posts a batch of sends and receives and polls the completion queue
// until every one has completed, spinning briefly and then sleeping on the queue's descriptor, and
// gives up at the deadline, on an abort, or on a completion error. A failed batch may leave
// receives posted into user buffers, so the endpoint is abandoned at once (see abandon()):
// nothing can land later.
//
// A transfer marked one-sided is written straight into the receiver's registered buffer
// (net/one_sided.cc): the receiver sends a clear-to-send with the buffer's address and key, the
// sender a notice, then the sender writes with remote completion data, and the receiver's queue
// reports the write.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "core/status.h"
#include "net/provider.h"
#include "net/registrations.h"

namespace stratacl::net {

// A receiver's clear-to-send for a one-sided transfer: where the sender writes, and how much.
struct ClearToSend {
  uint64_t addr = 0, key = 0, bytes = 0;
};

struct Transfer {
  fi_context2 ctx{};  // the fabric's, first so a completion's context finds its transfer
  bool send = false;
  int peer = 0;  // index in connect()'s list (or add_peer()'s)
  // The sender's number on the wire where it is not the endpoint's own numbering (a heartbeat
  // hub's, net/heartbeat_hub.h, serves many communicators): a send's own rank, a receive's
  // peer's rank. -1: connect()'s indices.
  int rank = -1;
  void* buf = nullptr;  // sends read it, receives fill it
  size_t bytes = 0;
  uint64_t tag = 0;      // the batch's tag (< 2^45: see kFailedTag); the sender's index goes below
  bool done = false;     // set by run()
  void* desc = nullptr;  // set by run(): the buffer's registration (net/registrations.h)
  // Receives: tag bits that need not match for the message to land. run() then requires them
  // equal, or asks the endpoint's mismatch text; listen() leaves the tag matched in `tag`. With
  // kKindTags among them, a receive also matches the other kind's messages (one-sided or not),
  // which then are another call's.
  uint64_t ignore = 0;
  bool failed = false;  // poll() only: the transfer completed with an error
  // The peer's message, notice or clear-to-send said that the call had failed there
  // (kFailedTag): the transfer is done, and nothing was written. Set by run().
  bool peer_failed = false;
  // Written one-sided (both sides must say so alike; only where Endpoint::writes()).
  bool one_sided = false;
  // run()'s progress through the one-sided protocol (net/one_sided.cc). A sender injects its
  // notice, posts the receive of the clear-to-send, posts its write when that has come, and
  // waits for the write. A receiver injects its clear-to-send and posts the receive of the
  // notice; it is done when the notice has come and the write has landed.
  enum Stage : uint8_t {
    kStart,
    kNoticeSent,           // sender
    kAwaitingClearToSend,  // sender
    kReadyToWrite,         // sender
    kWriting,              // sender
    kClearToSendSent,      // receiver
    kAwaitingNotice,       // receiver
  };
  Stage stage = kStart;
  bool heard = false, landed = false;  // receiver: the notice has come; the write has landed
  ClearToSend cts;                     // sent by the receiver, received by the sender
  void* cts_desc = nullptr;  // the sender's registration of `cts`, where the provider wants one
  // A word that travels before the data in the same message (only where
  // Endpoint::carries_headers()): a send sends *header, a receive fills it. Both ends of a
  // message must have one, or neither.
  uint64_t* header = nullptr;
  void* header_desc = nullptr;  // set by run()
};

// The tag bits of the one-sided protocol's messages: a sender's notice and a receiver's
// clear-to-send, so that neither matches a message of data unless a receive ignores them.
constexpr uint64_t kNoticeTag = uint64_t(1) << 46;
constexpr uint64_t kClearToSendTag = uint64_t(1) << 47;
constexpr uint64_t kKindTags = kNoticeTag | kClearToSendTag;
// A transfer whose tag carries this bit belongs to a call that failed on this rank before the
// batch. A send's message (a one-sided sender's notice) carries no data and says so, and a
// one-sided sender still waits for its clear-to-send, then writes nothing; a one-sided
// receiver's clear-to-send says so, and its sender writes nothing either (a message of data
// still lands). So both ends finish the batch, and the end whose call had not failed learns
// why (Transfer::peer_failed). Receives that are to meet such messages ignore the bit. The
// endpoint's own bits begin here: an owner's tags stay below.
constexpr uint64_t kFailedTag = uint64_t(1) << 45;

// What run() checks while it waits (the communicator's abort flag); and how it names a peer.
using StopCheck = std::function<Status(int waiting_on)>;
using PeerName = std::function<std::string(int peer)>;

// What a rank tells the others when a communicator that spans hosts splits: fixed size, so the
// cards travel in one allgather.
struct SplitCard {
  int32_t color = 0, key = 0, result = 0;  // result: sclSuccess, or why this rank cannot join
  uint32_t name_bytes = 0;
  uint8_t name[112] = {};  // the child's endpoint address
};

// How long a communicator's network wait polls, yielding the core between polls, before it
// sleeps on the completion queue: a round trip between hosts takes 10-50 µs when both ranks run,
// far more when they share cores with others, and a sleeping rank's wake-up then costs more than
// the yields. Measured (bench/compare --hosts 2 -n 4, 2 cores): 300 µs gave 190 µs per small
// allreduce, 1 ms gave 28 µs.
constexpr int64_t kDataSpinNs = 1000000;

class Endpoint {
 public:
  // Waits spin `spin_ns` (yielding the core between polls if `yield`), then sleep.
  static Result<std::unique_ptr<Endpoint>> open(int64_t spin_ns, bool yield);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  const fi_info& info() const { return *info_; }
  // After a failed batch: nothing more can go over this endpoint.
  bool closed() const { return ep_ == nullptr || abandoned_; }
  // Stops using the endpoint for good, without closing it. Progress is manual, so with no call
  // into it nothing it had posted moves again: no receive can land in a user buffer. Its handles
  // are kept, reachable, until the process exits: libfabric 1.17's rxm crashes in fi_close on an
  // endpoint whose transfers are stuck on a cut link (it handles their cancellations through
  // freed contexts). The cost: one endpoint's sockets and buffers per failed communicator.
  // Its registrations are closed, so no key it sent lets a peer write into our memory any more.
  void abandon();
  const Registrations& registrations() const { return *regs_; }
  // Whether transfers may be one-sided here: the provider writes into registered memory with
  // 8 bytes of remote completion data, and can inject a clear-to-send.
  bool writes() const { return writes_; }
  // Whether messages may carry a Transfer::header: the provider takes two-part messages.
  bool carries_headers() const {
    return info_->tx_attr->iov_limit >= 2 && info_->rx_attr->iov_limit >= 2;
  }
  int64_t spin_ns() const { return spin_ns_; }
  // Our address, to be published to the peers.
  std::vector<uint8_t> name() const;
  // Peer addresses, one per peer index (our own included).
  Status connect(const std::vector<std::vector<uint8_t>>& names, int self);
  // Or peers added one at a time, each address once: its index, the same for the same address.
  Result<int> add_peer(const std::vector<uint8_t>& name);
  // What run() says when a receive matched a message whose ignored tag bits differ from its own
  // (a peer in another call): the text after "<peer> ", from the peer's tag and ours.
  using MismatchText = std::function<std::string(uint64_t theirs, uint64_t ours)>;
  void on_mismatch(MismatchText text) { mismatch_ = std::move(text); }
  // Tag bits (the owner's call signature) in which a failed call's message (kFailedTag, either
  // end's) may differ from the receive it meets: a call that failed with mismatched arguments
  // needs no matching ones to say so. Its other bits (the call's number, the batch's) still
  // must match.
  void excuse_in_failed_calls(uint64_t bits) { excused_ = bits; }

  // Runs a batch: every transfer is posted, then run() returns when all have completed.
  // `stop` is asked, while run() waits, with the peer of the first receive not done yet (-1:
  // none).
  Status run(std::span<Transfer> batch, const Deadline& deadline, const StopCheck& stop,
             const PeerName& who);

  // Asynchronous zero-byte messages whose tag is the whole payload, for the heartbeat
  // (net/heartbeat.h), on an endpoint of its own: signal() sends one and forgets it (false when
  // the queue is full; `rank` as Transfer::rank); listen() posts a receive from t.peer that
  // poll() completes; poll() reaps completions and, when none came, sleeps up to `ms` on the
  // queue or until `wake_fd` is readable. cancel() withdraws a posted receive: poll() then
  // completes it, failed.
  bool signal(int peer, uint64_t tag, int rank = -1);
  Status listen(Transfer& t);
  void cancel(Transfer& t);
  // Posts a send or a receive of t.bytes at t.buf (a receive may meet a shorter message: poll()
  // then sets t.bytes to what arrived) for poll() to complete. A small send is done on return.
  Status post_async(Transfer& t);
  void poll(int ms, int wake_fd);
  // Tests only: a write with a clear-to-send of the caller's choosing (one a stranger read off
  // the wire), waited for until the deadline; fails where the provider refuses it.
  Status write_for_testing(int peer, const void* buf, size_t bytes, const ClearToSend& cts,
                           const Deadline& deadline);
  // Drives the provider for `ns` with nothing of ours outstanding: small sends it copied and
  // queued (a full socket) leave before the endpoint goes. Reads no transfer's completion.
  void flush(int64_t ns);

 private:
  Endpoint() = default;
  static constexpr int kPeerBits = 16;  // the low tag bits on the wire: the sender's peer index
  static uint64_t wire_tag(uint64_t tag, int sender) {
    return (tag << kPeerBits) | uint64_t(sender);
  }
  ssize_t post(Transfer& t);
  // `bytes`: the data's (none in a failed call's send).
  ssize_t post_with_header(Transfer& t, size_t bytes, uint64_t tag, fi_addr_t peer);
  // Reads completions; counts the transfers of `batch` they finish, and in `events` every
  // completion read (progress, even when it finishes nothing).
  // A receive whose message has another size is completed and its error kept in `sizes`.
  Status reap(std::span<Transfer> batch, const PeerName& who, size_t* finished, size_t* events,
              Status* sizes);
  // A receive matched a message whose ignored tag bits differ from its own: a peer in another
  // call, reported with the owner's mismatch text.
  bool another_call(const Transfer& t, uint64_t theirs) const;
  // Whether the transfer waits for a message from its peer (a receive, or a one-sided sender
  // waiting for the clear-to-send).
  static bool receiving(const Transfer& t);
  // What the transfer's posted receive expects, and the tag bits it ignores: a data message
  // (tag), the notice a one-sided receiver waits for (tag | kNoticeTag; it may also match data),
  // or the clear-to-send a one-sided sender waits for (tag | kClearToSendTag, exactly).
  static uint64_t expected_tag(const Transfer& t);
  static uint64_t ignored_bits(const Transfer& t);

  // The one-sided protocol (net/one_sided.cc).
  // Before posting: the receiver's clear-to-send (its registration's address and key), the
  // sender's registration of the one it will receive.
  Status prepare_one_sided(Transfer& t);
  // Posts the first steps (see Transfer::Stage); called again after -FI_EAGAIN, it goes on
  // where it stopped.
  ssize_t post_one_sided(Transfer& t);
  // Posts the writes whose clear-to-send has come; counts them in `posted`.
  Status post_writes(std::span<Transfer> batch, const PeerName& who, size_t* posted);
  // A completion of a one-sided transfer's step (a null context: a peer's write has landed).
  // `finished` counts what it finishes.
  Status one_sided_step(const fi_cq_tagged_entry& e, std::span<Transfer> batch, const PeerName& who,
                        size_t* finished);
  Status another_call_error(const Transfer& t, uint64_t theirs, const PeerName& who) const;
  // poll()'s read: marks the transfers completions finish; false when there were none.
  bool read_async();
  // Waits up to `ms` for the completion queue to have something, or `wake_fd` (-1: none).
  void sleep(int ms, int wake_fd = -1);
  void close();
  // An abandoned endpoint's destructor: its handles join those kept until exit.
  void park();

  InfoPtr info_;
  std::unique_ptr<Registrations> regs_;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_ep* ep_ = nullptr;
  fid_av* av_ = nullptr;
  fid_cq* cq_ = nullptr;
  MismatchText mismatch_;
  uint64_t excused_ = 0;  // excuse_in_failed_calls()
  std::vector<fi_addr_t> peers_;
  std::vector<std::vector<uint8_t>> names_;  // add_peer()'s, by index
  int self_ = 0;
  int64_t spin_ns_ = 0;
  bool yield_ = false;
  int wait_fd_ = -1;  // the completion queue's descriptor to sleep on, if it has one
  bool abandoned_ = false;
  bool writes_ = false;
};

}  // namespace stratacl::net
