#include "run_info.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <new>

#include "reduce/reduce.h"

namespace stratacl::bench {

std::string version_string(int version) {
  return std::to_string(version / 10000) + "." + std::to_string(version % 10000 / 100) + "." +
         std::to_string(version % 100);
}

uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "unknown";
  return name;
}

std::string reduction_isa() { return stratacl::reduce::isa_name(stratacl::reduce::active_isa()); }

// Under a sanitizer the copy measures the instrumentation, not the machine, and costs seconds per
// launch: ThreadSanitizer checks and maps shadow memory for every byte of the 512 MiB.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define STRATACL_BENCH_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || \
    defined(STRATACL_BENCH_SANITIZED)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

double measure_memcpy_gbs(size_t bytes, int tries) {
  if (kSanitized) return std::numeric_limits<double>::quiet_NaN();
  constexpr size_t kAlignment = 4096;
  void* src = nullptr;
  void* dst = nullptr;
  if (posix_memalign(&src, kAlignment, bytes) != 0) throw std::bad_alloc();
  if (posix_memalign(&dst, kAlignment, bytes) != 0) {
    std::free(src);
    throw std::bad_alloc();
  }
  // Touch every page of both buffers first: page faults are not copy bandwidth.
  std::memset(src, 1, bytes);
  std::memset(dst, 2, bytes);
  double best_ns = 0;
  for (int i = 0; i < tries; ++i) {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(dst, src, bytes);
    // Keep the copy: the compiler may not assume dst is dead before it is freed.
    asm volatile("" : : "r"(dst) : "memory");
    const std::chrono::duration<double, std::nano> elapsed =
        std::chrono::steady_clock::now() - start;
    if (i == 0 || elapsed.count() < best_ns) best_ns = elapsed.count();
  }
  std::free(src);
  std::free(dst);
  return best_ns > 0 ? static_cast<double>(bytes) / best_ns : 0.0;
}

}  // namespace stratacl::bench
