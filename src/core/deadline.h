// A point on the monotonic clock after which a wait gives up.
#pragma once

#include <time.h>

#include <cstdint>

namespace stratacl {

inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

class Deadline {
 public:
  static Deadline after_ms(int64_t ms) { return Deadline(now_ns() + ms * 1000000); }
  static Deadline at_ns(int64_t at) { return Deadline(at); }
  bool expired() const { return now_ns() >= at_ns_; }
  int64_t remaining_ns() const {
    int64_t r = at_ns_ - now_ns();
    return r > 0 ? r : 0;
  }
  // Remaining time in ms for poll(2), rounded up so we never spin on a 0 ms poll.
  int remaining_ms() const {
    int64_t r = (remaining_ns() + 999999) / 1000000;
    return r > 1 << 30 ? 1 << 30 : int(r);
  }
  int64_t at_ns() const { return at_ns_; }

 private:
  explicit Deadline(int64_t at) : at_ns_(at) {}
  int64_t at_ns_;
};

}  // namespace stratacl
