// What sclGetLastError and sclCommGetAsyncError report for one communicator. Thread-safe.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "core/status.h"

namespace stratacl {

class ErrorState {
 public:
  void set_last(const Status& s) {
    std::lock_guard<std::mutex> lock(mu_);
    last_ = s.message();
  }
  std::string last() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }
  // A stream call failed and the communicator cannot go on (or is non-blocking): the first
  // such code sticks (NCCL's async error).
  void set_async(const Status& s) {
    sclResult_t expected = sclSuccess;
    async_.compare_exchange_strong(expected, s.code());
    set_last(s);
  }
  sclResult_t async() const { return async_.load(); }

 private:
  mutable std::mutex mu_;
  std::string last_;
  std::atomic<sclResult_t> async_{sclSuccess};
};

}  // namespace stratacl
