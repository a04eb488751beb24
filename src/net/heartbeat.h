// Liveness across hosts. No pidfd reaches another host, and a cut link is silent: TCP notices it
// only after minutes, and a receive waits for the call's deadline. So every rank of a
// communicator that spans hosts beats: a thread of its own, on an endpoint of its own, sends a
// zero-byte message to every rank on the other hosts every eighth of the loss time, and listens
// for theirs. A rank not heard from for the loss time (STRATACL_NET_LOST_MS) is lost, and every
// call on the communicator fails with sclRemoteError naming it.
//
// The beat carries the sender's state, so the same messages spread failure: a rank whose
// communicator is revoked (a failed call, sclCommAbort) says so at once, with the rank it blames,
// and the ranks on other hosts fail as the ranks of one host do when a peer revokes; a rank that
// destroys the communicator says it left, and then it is not missed.
//
// The thread makes every fabric call on its endpoint; the callers only set atomics and wake it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/deadline.h"
#include "core/status.h"
#include "net/endpoint.h"

namespace stratacl::net {

class Heartbeat {
 public:
  enum class State : uint8_t { kAlive = 0, kFailed = 1, kAborted = 2, kLeft = 3 };

  static Result<std::unique_ptr<Heartbeat>> open();
  ~Heartbeat();  // leave(), then the endpoint closes
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // Our endpoint's address, for the peers.
  std::vector<uint8_t> name() const { return ep_->name(); }
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
  // Says goodbye (the peers stop expecting us) and stops the thread. Idempotent.
  void leave();

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

 private:
  explicit Heartbeat(std::unique_ptr<Endpoint> ep) : ep_(std::move(ep)) {}
  void loop();
  void beat(uint64_t word);
  // Handles what one peer said: alive, failed (with its culprit), or left.
  void heard(int peer, uint64_t word, int64_t now);
  void say_goodbye();
  uint64_t tag_of(uint64_t word) const;  // the nonce, then `word`
  // `silence`: a watched rank was not heard for the loss time (else: it said it failed).
  void lose(Status why, int culprit, bool silence);
  void wake() const;
  // The loop's share of the records: sends ours where it changed, keeps what arrived.
  struct RecordLines;
  void post_records(RecordLines& lines);
  void reap_records(RecordLines& lines);

  std::unique_ptr<Endpoint> ep_;  // the thread's; it closes it when it ends
  int wake_fd_ = -1;              // an eventfd: fail() and leave() interrupt the thread's sleep
  uint64_t nonce_ = 0;
  std::vector<int> watched_;
  int64_t lost_after_ns_ = 0;
  PeerName who_;
  std::jthread thread_;

  std::atomic<uint64_t> word_{0};  // what we say: State | (culprit + 1) << 2
  std::atomic<bool> stopping_{false};
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
