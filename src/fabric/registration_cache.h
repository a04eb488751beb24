// sclCommRegister's interval cache of foreign (non-heap) buffers that peers may read with a
// kernel-assisted copy. Registering the same range again takes a reference on the existing entry
// (and returns the same handle); overlapping ranges are separate entries whose union counts when
// a call asks whether its buffer is covered. An entry goes when its last reference is dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace stratacl {

class RegistrationCache {
 public:
  RegistrationCache() = default;
  RegistrationCache(const RegistrationCache&) = delete;
  RegistrationCache& operator=(const RegistrationCache&) = delete;

  // Adds a reference to [p, p + bytes) and returns its handle (never null).
  void* add(const void* p, size_t bytes);
  // Drops one reference; false when `handle` is not a live handle of this cache.
  bool remove(void* handle);
  // True when every byte of [p, p + bytes) lies in some registered range.
  bool covers(const void* p, size_t bytes) const;

  size_t entries() const;
  uint32_t references(void* handle) const;  // 0 for an unknown handle

 private:
  using Key = std::pair<uintptr_t, uintptr_t>;  // [begin, end), ordered by begin
  struct Entry {
    uint32_t refs = 0;
  };
  bool covers_locked(uintptr_t lo, uintptr_t hi) const;

  mutable std::mutex mu_;
  std::map<Key, Entry> ranges_;
  std::unordered_map<const void*, Key> by_handle_;  // handle = address of the entry
  mutable Key last_hit_{0, 0};                      // calls reuse the same buffers
};

}  // namespace stratacl
