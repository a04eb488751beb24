// One heartbeat endpoint and thread per process, shared by every communicator that spans hosts
// (each one's Heartbeat, net/heartbeat.h, is a session of the hub). An rxm endpoint costs tens of
// milliseconds to enable and 17 MB and more of bounce buffers (docs/PERFORMANCE.md, "Making a
// communicator across hosts"), and a child communicator would otherwise open one more for its
// beats alone.
// Shared, a peer's hub has one address for all its communicators, so a new communicator's beats
// also go over connections already up. Each session's messages carry its communicator's nonce
// and the sender's rank in it, so sessions never read each other's.
//
// The thread makes every fabric call on the endpoint, address insertions included; sessions
// join and part through it. A parted session's receives stay posted a while (kLingerNs), so that
// beats its peers sent before they heard its goodbye land there rather than pile up in the
// provider, and are then cancelled; its nonce stays taken until then, so that no new
// communicator of the process takes it (comm/across_hosts.cc picks one no member's hub has).
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/status.h"
#include "net/endpoint.h"

namespace stratacl::net {

class Heartbeat;

class HeartbeatHub {
 public:
  // The process's hub, opened by its first communicator across hosts and closed after its last.
  static Result<std::shared_ptr<HeartbeatHub>> shared();
  // A hub of its own (tests: two "processes" in one).
  static Result<std::shared_ptr<HeartbeatHub>> open();
  ~HeartbeatHub();
  HeartbeatHub(const HeartbeatHub&) = delete;
  HeartbeatHub& operator=(const HeartbeatHub&) = delete;

  // Our endpoint's address, for the peers.
  const std::vector<uint8_t>& name() const { return name_; }
  // The thread serves `hb` from now on, once the addresses of the ranks it watches (`names`,
  // by rank) are in the endpoint's address vector; their indices go to hb's routes.
  Status join(Heartbeat* hb, const std::vector<std::vector<uint8_t>>& names);
  // The thread sends hb's last records and its goodbye, keeps its receives for a while, and
  // serves it no more: hb may go once this returns.
  void part(Heartbeat* hb);
  // Interrupts the thread's sleep: a session has news.
  void wake() const;
  // Whether a session, live or lingering, has `nonce` (its communicator's, as its tags carry it).
  bool nonce_taken(uint64_t nonce);
  // Whether this process forked since the hub opened: the thread is not in this one.
  bool forked() const;

 private:
  HeartbeatHub() = default;
  void loop();
  // The requests of join() and part(), on the thread.
  void take_requests();
  // A parted session's receives, still posted; `until`: when they are cancelled.
  struct Linger;
  void serve_lingers(int64_t now);
  // A linger whose receives may still be written: kept, reachable, until the process exits.
  static void keep_forever(std::unique_ptr<Linger> l);

  std::unique_ptr<Endpoint> ep_;  // the thread's, once started
  std::vector<uint8_t> name_;
  int wake_fd_ = -1;
  pid_t pid_ = 0;  // the process that opened it: a forked child opens its own

  std::mutex mu_;
  std::condition_variable answered_;  // with mu_: a request was handled
  struct Request {
    Heartbeat* hb;
    const std::vector<std::vector<uint8_t>>* names;  // null: part
    Status result;
    bool done = false;
  };
  std::vector<Request*> requests_;  // guarded by mu_
  bool stopping_ = false;           // guarded by mu_
  std::multiset<uint64_t> nonces_;  // guarded by mu_: the sessions', live and lingering

  // The thread's own.
  std::vector<Heartbeat*> sessions_;
  std::vector<std::unique_ptr<Linger>> lingers_;
  bool lost_any_ = false;  // a session lost a peer: the endpoint is abandoned, not closed
  std::jthread thread_;
};

}  // namespace stratacl::net
