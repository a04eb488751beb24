// sclStream_t: an in-order asynchronous queue with its own thread, which sleeps on a condition
// variable when idle. Work items run one after another; the first error sticks to the stream.
#pragma once

#include <condition_variable>
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
  // Waits until the queue is empty and nothing runs; returns the first error seen, if any.
  Status synchronize();
  bool idle();
  Status first_error();

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<std::function<Status()>> queue_;
  bool running_ = false, stop_ = false;
  Status error_;
  std::thread thread_;
};

}  // namespace stratacl
