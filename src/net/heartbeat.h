// Liveness across hosts. No pidfd reaches another host, and a cut link is silent: TCP notices it
// only after minutes, and a receive waits for the call's deadline. So every rank of a
// communicator that spans hosts beats: the process's heartbeat thread, on the process's heartbeat
// endpoint (net/heartbeat_hub.h, shared by all its communicators), sends a zero-byte message to
// every rank on the other hosts every eighth of the loss time, and listens for theirs. A rank not
// heard from for the loss time (STRATACL_NET_LOST_MS) is lost, and every call on the communicator
// fails with sclRemoteError naming it.
//
// The beat carries the sender's state, so the same messages spread failure: a rank whose
// communicator is revoked (a failed call, sclCommAbort) says so at once, with the rank it blames,
// and the ranks on other hosts fail as the ranks of one host do when a peer revokes; a rank that
// destroys the communicator says it left, and then it is not missed.
//
// The hub's thread makes every fabric call on the endpoint; the callers only set atomics and wake
// it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/deadline.h"
#include "core/status.h"
#include "net/endpoint.h"
#include "net/heartbeat_hub.h"

namespace stratacl::net {

class Heartbeat {
 public:
  enum class State : uint8_t { kAlive = 0, kFailed = 1, kAborted = 2, kLeft = 3 };

  // A session of `hub` (null: the process's).
  static Result<std::unique_ptr<Heartbeat>> open(std::shared_ptr<HeartbeatHub> hub = nullptr);
  ~Heartbeat();  // leave()
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // Our hub's address, for the peers.
  std::vector<uint8_t> name() const { return hub_->name(); }
  // Connects to every rank's heartbeat endpoint (names[self] is ours), starts beating to, and
  // listening for, the ranks in `watched`, and returns once each of them was heard: the
  // connections are up then, so a failure said at once (even just before a close) goes out at
  // once. A rank heard saying it failed was heard too: it had made the communicator, so start()
  // succeeds and check() reports the failure at the first call. Only a watched rank gone silent
  // for the loss time, or the deadline, fails start(). `nonce`: the same on every rank of this
  // communicator, and only its beats count. `who` names a rank in errors.
  // `record_bytes`: the largest record (below) a peer may send.
  Status start(const std::vector<std::vector<uint8_t>>& names, int self, uint64_t nonce,
               std::vector<int> watched, int64_t lost_after_ms, PeerName who,
               const Deadline& deadline, size_t record_bytes = 0);

  // Why calls cannot go on, or ok: a watched rank was lost or failed, or `waiting_on` (a rank
  // a call waits to receive from; -1: none) left the communicator. Cheap when all is well.
  Status check(int waiting_on) const;
  // Tells every watched rank at once that this rank failed or aborted, blaming `culprit`
  // (a rank; ours when we are the cause); `usage`: the failure was a mismatch (the peers fail
  // with sclInvalidUsage too). The first word sticks.
  void fail(State why, int culprit, bool usage = false);
  // Says goodbye (the peers stop expecting us); the hub serves us no more. Idempotent.
  void leave();
  // Whether another communicator of this process has `nonce` (as start() would cut it) on the
  // hub, live or just ended: a new one must pick another, or their messages could meet.
  bool nonce_taken(uint64_t nonce) const;

  // The culprit of the first loss or failure heard, or -1.
  int culprit() const { return lost_culprit_.load(std::memory_order_acquire); }

  // Records (sclCommShrink's votes, comm/shrink_record.h): ours goes to every watched rank now,
  // and again whenever it changes; of each rank's, the latest is kept. A record travels as one
  // message whose tag says it is one and numbers it, so a late one never replaces a newer.
  void set_record(std::vector<uint64_t> words);
  std::optional<std::vector<uint64_t>> record(int peer) const;
  // Whether a watched rank is gone for good: silent for the loss time, or it said goodbye (and
  // a record it sent before has had time to land).
  bool gone(int peer) const;

  // A receive the hub's thread keeps posted: from one watched rank, its beats or its records.
  struct Receive {
    Transfer t;
    bool posted = false;
    int peer = 0, rank = 0;  // the hub's index of the rank; its rank
    uint64_t tag = 0;        // what it matches, ignoring the word's bits
    std::vector<uint64_t> buf;
    size_t bytes = 0;  // 0: a beat
    void post(Endpoint& ep);
  };
  // What the hub's thread has posted for the session: per watched rank a receive of its beats
  // and one of its records, and the send of our record. A parted session's stay with the hub a
  // while (net/heartbeat_hub.h).
  struct Lines {
    explicit Lines(size_t watched)
        : ears(watched),
          ins(watched),
          out(watched),
          out_bufs(watched),
          sent(watched, 0),
          sending(watched, false) {}
    std::vector<Receive> ears, ins;
    std::vector<Transfer> out;
    std::vector<std::vector<uint64_t>> out_bufs;
    std::vector<uint32_t> sent;  // the number of the record last sent
    std::vector<bool> sending;
    // While lingering: posts again what a message completed (the message is dropped).
    void relisten(Endpoint& ep);
    void cancel(Endpoint& ep);  // withdraws every receive
    bool settled() const;       // nothing posted is outstanding
  };

 private:
  friend class HeartbeatHub;
  explicit Heartbeat(std::shared_ptr<HeartbeatHub> hub) : hub_(std::move(hub)) {}

  // The hub's thread serves the session through these. set_routes(): per watched rank, the
  // hub's index of its address.
  void set_routes(std::vector<int> routes);
  int64_t period_ns() const;  // between beats: an eighth of the loss time, at least 1 ms
  // Posts what is not posted, and beats when due; returns when it wants to beat next.
  int64_t prepare(Endpoint& ep, int64_t now);
  // Reads what the hub's poll brought; `overrun_ns`: how far the poll ran past what it asked
  // for (a stalled machine or process is our silence, not the peers').
  void collect(int64_t now, int64_t overrun_ns);
  // Sends our last record and the goodbye; returns what is still posted.
  std::unique_ptr<Lines> finish(Endpoint& ep);
  bool lost() const { return lost_.load(std::memory_order_acquire); }

  void beat(Endpoint& ep, uint64_t word);
  // Handles what one peer said: alive, failed (with its culprit), or left.
  void heard(int peer, uint64_t word, int64_t now);
  void say_goodbye(Endpoint& ep);
  uint64_t tag_of(uint64_t word) const;  // the nonce, then `word`
  // `silence`: a watched rank was not heard for the loss time (else: it said it failed).
  void lose(Status why, int culprit, bool silence);
  void wake() const { hub_->wake(); }
  // The thread's share of the records: sends ours where it changed, keeps what arrived.
  void post_records(Endpoint& ep);
  void reap_records();

  std::shared_ptr<HeartbeatHub> hub_;
  bool joined_ = false;  // served by the hub: from start() to leave()
  uint64_t nonce_ = 0;
  int self_ = 0;
  std::vector<int> watched_;
  int64_t lost_after_ns_ = 0;
  PeerName who_;

  // The hub's thread's own.
  std::vector<int> routes_;  // per watched rank
  std::unique_ptr<Lines> lines_;
  std::vector<int64_t> last_;  // per watched rank: when it was last heard
  std::vector<bool> heard_once_;
  size_t unheard_ = 0;
  int64_t next_beat_ = 0;
  uint64_t said_ = ~uint64_t(0);
  bool silent_seen_ = false;  // a watched rank was lost to silence

  std::atomic<uint64_t> word_{0};                    // what we say: State | (culprit + 1) << 2
  std::unique_ptr<std::atomic<int64_t>[]> left_at_;  // per rank: when it said goodbye (0: not)
  std::atomic<bool> lost_{false};
  std::condition_variable all_heard_;  // with mu_: every watched rank was heard once (heard_all_)
  bool heard_all_ = false;
  bool silence_ = false;  // guarded by mu_: lose() was told of a silent rank
  std::atomic<int> lost_culprit_{-1};
  mutable std::mutex mu_;
  Status lost_why_;                              // guarded by mu_; set once
  std::unique_ptr<std::atomic<bool>[]> silent_;  // per rank: lost to silence

  size_t record_bytes_ = 0;
  mutable std::mutex records_mu_;
  std::vector<uint64_t> my_record_;            // guarded by records_mu_
  std::atomic<uint32_t> my_version_{0};        // 0: no record yet
  std::atomic<int64_t> records_posted_at_{0};  // when the loop first listened for records
  std::vector<std::optional<std::vector<uint64_t>>> records_;  // guarded; per rank
  std::vector<uint32_t> record_versions_;                      // guarded; per rank
};

}  // namespace stratacl::net
