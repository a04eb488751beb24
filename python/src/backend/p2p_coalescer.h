// Sends and receives issued back to back on a process group progress together, as NCCL's
// grouped calls do. A StrataCL call runs in its communicator's turn and holds it until it
// finishes, and a send finishes when its receiver has copied it. So a send queued alone would
// hold up the receive issued right after it: in a ring exchange (isend to the next rank, irecv
// from the previous, then wait both) every rank would wait in its send. Here point-to-point
// Works are held back and issued as one group (sclGroupStart/End) when anything needs them:
// a wait, isCompleted or getFuture on any of them, any other call on any StrataCL process group of
// the process, or a send or receive on another group (so a send held on one group never waits for
// a receive held on another), or the group's destruction. The group's calls then progress in any
// order, and its Works complete together with the group's result.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/work.h"
#include "stratacl/stratacl.h"

namespace stratacl_torch {

class P2PCoalescer {
 public:
  explicit P2PCoalescer(sclStream_t stream);
  ~P2PCoalescer();

  // The process group's lock: its calls and their completions reach the stream in one order.
  // Owned here, so it lives as long as anything that may still flush.
  std::mutex& issue_mutex() { return mu_; }

  using Issue = std::function<sclResult_t(sclStream_t)>;
  // Holds `work`, whose one call `issue` queues, until the next flush. With issue_mutex() held.
  void hold(const c10::intrusive_ptr<Work>& work, Issue issue);
  // Issues what is held as one group, with one completion for all of it. flush_locked: with
  // issue_mutex() held.
  void flush();
  void flush_locked();
  // Flushes every process group's held calls (before any other call is issued, and before a
  // wait: the other half of an exchange may be held on another group), or all but `except`'s.
  static void flush_all(const P2PCoalescer* except = nullptr);
  // The process group is going: nothing more is held, and flush_all no longer reaches it.
  void close();

 private:
  struct Held {
    c10::intrusive_ptr<Work> work;
    Issue issue;
  };
  sclStream_t stream_;
  std::mutex mu_;
  std::vector<Held> held_;  // under mu_
};

}  // namespace stratacl_torch
