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

struct Transfer {
  fi_context2 ctx{};  // the fabric's, first so a completion's context finds its transfer
  bool send = false;
  int peer = 0;         // index in connect()'s list
  void* buf = nullptr;  // sends read it, receives fill it
  size_t bytes = 0;
  uint64_t tag = 0;      // the batch's tag (< 2^48); the sender's index is added below it
  bool done = false;     // set by run()
  void* desc = nullptr;  // set by run(): the buffer's registration (net/registrations.h)
  // Receives: tag bits that need not match for the message to land. run() then requires them
  // equal, or asks the endpoint's mismatch text; listen() leaves the tag matched in `tag`.
  uint64_t ignore = 0;
  bool failed = false;  // poll() only: the transfer completed with an error
};

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
  void abandon() { abandoned_ = true; }
  const Registrations& registrations() const { return *regs_; }
  int64_t spin_ns() const { return spin_ns_; }
  // Our address, to be published to the peers.
  std::vector<uint8_t> name() const;
  // Peer addresses, one per peer index (our own included).
  Status connect(const std::vector<std::vector<uint8_t>>& names, int self);
  // What run() says when a receive matched a message whose ignored tag bits differ from its own
  // (a peer in another call): the text after "<peer> ", from the peer's tag and ours.
  using MismatchText = std::function<std::string(uint64_t theirs, uint64_t ours)>;
  void on_mismatch(MismatchText text) { mismatch_ = std::move(text); }

  // Runs a batch: every transfer is posted, then run() returns when all have completed.
  // `stop` is asked, while run() waits, with the peer of the first receive not done yet (-1:
  // none).
  Status run(std::span<Transfer> batch, const Deadline& deadline, const StopCheck& stop,
             const PeerName& who);

  // Asynchronous zero-byte messages whose tag is the whole payload, for the heartbeat
  // (net/heartbeat.h), on an endpoint of its own: signal() sends one and forgets it (false when
  // the queue is full); listen() posts a receive from t.peer that poll() completes; poll() reaps
  // completions and, when none came, sleeps up to `ms` on the queue or until `wake_fd` is
  // readable.
  bool signal(int peer, uint64_t tag);
  Status listen(Transfer& t);
  void poll(int ms, int wake_fd);
  // Drives the provider for `ns` with nothing of ours outstanding: small sends it copied and
  // queued (a full socket) leave before the endpoint goes. Reads no transfer's completion.
  void flush(int64_t ns);

 private:
  Endpoint() = default;
  ssize_t post(Transfer& t);
  // Reads completions; counts the transfers they finish.
  Status reap(const PeerName& who, size_t* finished);
  // A receive matched a message whose ignored tag bits differ from its own: a peer in another
  // call, reported with the owner's mismatch text.
  static bool another_call(const Transfer& t, uint64_t theirs);
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
  std::vector<fi_addr_t> peers_;
  int self_ = 0;
  int64_t spin_ns_ = 0;
  bool yield_ = false;
  int wait_fd_ = -1;  // the completion queue's descriptor to sleep on, if it has one
  bool abandoned_ = false;
};

}  // namespace stratacl::net
