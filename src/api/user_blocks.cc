#include "api/user_blocks.h"

#include <map>
#include <mutex>

namespace stratacl::api::user_blocks {
namespace {

std::mutex g_mu;
std::map<uintptr_t, size_t>& live() {  // start -> bytes asked for
  static auto* m = new std::map<uintptr_t, size_t>();
  return *m;
}

}  // namespace

void add(const void* start, size_t bytes) {
  std::lock_guard lock(g_mu);
  live()[reinterpret_cast<uintptr_t>(start)] = bytes;
}

bool remove(const void* start) {
  std::lock_guard lock(g_mu);
  return live().erase(reinterpret_cast<uintptr_t>(start)) == 1;
}

uint64_t bytes_left(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::lock_guard lock(g_mu);
  auto it = live().upper_bound(at);
  if (it == live().begin()) return 0;
  --it;
  const uintptr_t end = it->first + it->second;
  return at < end ? end - at : 0;
}

}  // namespace stratacl::api::user_blocks
