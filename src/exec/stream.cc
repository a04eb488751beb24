#include "exec/stream.h"

namespace stratacl {

Stream::Stream() : thread_([this] { loop(); }) {}

Stream::~Stream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
}

void Stream::enqueue(std::function<Status()> work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
  }
  work_cv_.notify_one();
}

void Stream::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop requested and drained
    std::function<Status()> work = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    Status s = work();
    lock.lock();
    running_ = false;
    if (!s.ok() && error_.ok()) error_ = s;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

Status Stream::synchronize() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && !running_; });
  return error_;
}

bool Stream::idle() {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.empty() && !running_;
}

Status Stream::first_error() {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

}  // namespace stratacl
