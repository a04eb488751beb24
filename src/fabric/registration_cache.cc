#include "fabric/registration_cache.h"

#include <algorithm>

namespace stratacl {

void* RegistrationCache::add(const void* p, size_t bytes) {
  const auto lo = reinterpret_cast<uintptr_t>(p);
  const uintptr_t hi = bytes > UINTPTR_MAX - lo ? UINTPTR_MAX : lo + bytes;
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = ranges_.try_emplace(Key{lo, hi});
  ++it->second.refs;
  void* handle = &it->second;  // map nodes never move
  if (inserted) by_handle_.emplace(handle, it->first);
  return handle;
}

bool RegistrationCache::remove(void* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto h = by_handle_.find(handle);
  if (h == by_handle_.end()) return false;
  auto it = ranges_.find(h->second);
  if (--it->second.refs == 0) {
    if (last_hit_ == it->first) last_hit_ = Key{0, 0};
    ranges_.erase(it);
    by_handle_.erase(h);
  }
  return true;
}

bool RegistrationCache::covers(const void* p, size_t bytes) const {
  const auto lo = reinterpret_cast<uintptr_t>(p);
  if (bytes > UINTPTR_MAX - lo) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (ranges_.empty()) return false;
  if (last_hit_.first <= lo && lo + bytes <= last_hit_.second && last_hit_.second > 0) return true;
  return covers_locked(lo, lo + bytes);
}

// Sweeps the ranges in order of their start, extending the covered prefix of [lo, hi); the
// first gap ends it. Single-range hits are remembered for the next call.
bool RegistrationCache::covers_locked(uintptr_t lo, uintptr_t hi) const {
  uintptr_t covered = lo;
  for (auto it = ranges_.begin(); it != ranges_.end() && it->first.first <= covered; ++it) {
    if (it->first.first <= lo && hi <= it->first.second) last_hit_ = it->first;
    covered = std::max(covered, it->first.second);
    if (covered >= hi) return true;
  }
  return lo == hi;
}

size_t RegistrationCache::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ranges_.size();
}

uint32_t RegistrationCache::references(void* handle) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto h = by_handle_.find(handle);
  return h == by_handle_.end() ? 0 : ranges_.at(h->second).refs;
}

}  // namespace stratacl
