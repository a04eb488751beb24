// sclStream_t: an in-order asynchronous queue with its own thread. Work items run one after
// another. Errors are reported once, not stuck to the stream: a synchronisation returns the first
// error since the previous one, and a mark (a host callback) the first error since the previous
// mark, so each completion speaks for its own calls. (A revoked communicator still fails every
// later call of its own accord.) Both waits, the thread's for new work and a
// caller's for the queue to drain, spin briefly and then sleep on a futex (exec/spin_wait.h):
// a call queued and synchronised at once costs no scheduler round trip, and an idle stream
// burns no core. The spins yield the core between polls, since the thread that would end the
// wait may need the very core the waiter holds.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "core/status.h"

struct sclStream {};  // the public handle type

namespace stratacl {

class Stream : public sclStream {
 public:
  Stream();
  ~Stream();  // drains the queue, then joins the thread

  void enqueue(std::function<Status()> work);
  // Waits until every item queued before the call has run; returns the first error since the
  // previous synchronize, if any, and forgets it.
  Status synchronize();
  bool idle();
  // The first error since the previous synchronize, kept for it.
  Status pending_error();
  // For an item, on the stream's thread: the first error since the previous call of this, and
  // forgets it.
  Status take_error_since_mark();
  // Whether the caller is the stream's thread (one of its items): it must not wait for the stream.
  bool own_thread() const { return std::this_thread::get_id() == thread_.get_id(); }
  // The stream whose thread calls this (from one of its items: a callback), or null.
  static const Stream* running();

 private:
  void loop();

  std::mutex mu_;  // guards queue_, stop_ and the errors
  std::deque<std::function<Status()>> queue_;
  bool stop_ = false;
  Status since_sync_, since_mark_;  // the first errors since the last synchronize and mark
  // Items ever queued and ever finished: the stream is idle when they are equal.
  std::atomic<uint32_t> queued_{0}, finished_{0};
  std::atomic<uint32_t> thread_sleeps_{0}, callers_sleep_{0};
  std::thread thread_;
};

}  // namespace stratacl
