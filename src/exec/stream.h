// sclStream_t: an in-order asynchronous queue with its own thread. Work items run one after
// another; the first error sticks to the stream. Both waits, the thread's for new work and a
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
  // Waits until every item queued before the call has run; returns the first error seen, if any.
  Status synchronize();
  bool idle();
  Status first_error();

 private:
  void loop();

  std::mutex mu_;  // guards queue_, stop_, error_
  std::deque<std::function<Status()>> queue_;
  bool stop_ = false;
  Status error_;
  // Items ever queued and ever finished: the stream is idle when they are equal.
  std::atomic<uint32_t> queued_{0}, finished_{0};
  std::atomic<uint32_t> thread_sleeps_{0}, callers_sleep_{0};
  std::thread thread_;
};

}  // namespace stratacl
