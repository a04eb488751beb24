// The copy engine: the analog of an NPU's SDMA or a GPU copy engine. Engine threads take copy
// descriptors from a queue and count each finished one off its Completion; the submitter goes on
// (reducing, or the caller's own compute) and waits on the Completion only when it needs the
// bytes. Engines start with the first descriptor and sleep when the queue is empty. A descriptor is
// pure data movement between two addresses this process can load and store, which is what a
// hardware engine (Intel DSA through idxd, a GPU copy engine) accepts too: another backend replaces
// the threads, not the callers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "exec/spin_wait.h"

namespace stratacl {

// Copies in flight for one submitter; wait() returns when all of them have landed. An engine
// thread may still touch the object just after the last count (to wake a sleeper), so it must
// outlive the engine: keep it beside the engine, declared before it, and reuse it.
class Completion {
 public:
  explicit Completion(SpinPolicy policy = {}) : policy_(policy) {}
  ~Completion() { wait(); }
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;

  void wait() const;

 private:
  friend class CopyEngine;
  SpinPolicy policy_;
  std::atomic<uint32_t> pending_{0};
  mutable std::atomic<uint32_t> sleepers_{0};
};

struct CopyDescriptor {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
  bool stream = false;  // non-temporal stores (exec/copy.h)
  Completion* done = nullptr;
};

class CopyEngine {
 public:
  explicit CopyEngine(int engines);
  ~CopyEngine();  // finishes the queue, then joins
  CopyEngine(const CopyEngine&) = delete;
  CopyEngine& operator=(const CopyEngine&) = delete;

  int engines() const { return engines_; }
  // Queues the copy, cut into one piece per engine when it is large enough to share.
  void submit(const CopyDescriptor& d);

 private:
  void loop();

  int engines_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<CopyDescriptor> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace stratacl
