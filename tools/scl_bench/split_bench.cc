#include "split_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "errors.h"
#include "run_info.h"

namespace stratacl::bench {
namespace {

int usage() {
  std::fprintf(stderr,
               "usage: stratarun -n R scl-bench split [--repeats N] [--keep]\n"
               "  --repeats N   splits timed, one after another (default 20)\n"
               "  --keep        every child kept until the last is made, as a framework keeps\n"
               "                its process groups; memory is then what they hold together\n"
               "                over their number\n");
  return 2;
}

// The most any rank holds of `mine`, over `comm`.
double most(double mine, sclComm_t comm) {
  double all = 0;
  require(sclAllReduce(&mine, &all, 1, sclFloat64, sclMax, comm, nullptr),
          "sclAllReduce on the world");
  return all;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A failure on the child names the child's error, and aborts it so that its peers fail too.
void require_on_child(sclResult_t result, const char* call, sclComm_t child) {
  if (result == sclSuccess) return;
  const std::string detail = sclGetLastError(child);
  sclCommAbort(child);
  throw LibraryError(result, call, detail);
}

}  // namespace

int run_split_main(int argc, char** argv) {
  int repeats = 20;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--keep") {
      keep = true;
    } else if (a == "--repeats" && i + 1 < argc) {
      char* end = nullptr;
      const long r = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || r < 1 || r > 100000) return usage();
      repeats = int(r);
    } else {
      return usage();
    }
  }
  sclComm_t world = nullptr;
  try {
    require(sclCommInitFromEnv(&world), "sclCommInitFromEnv");
    int rank = 0, n = 0;
    require(sclCommUserRank(world, &rank), "sclCommUserRank");
    require(sclCommCount(world, &n), "sclCommCount");
    std::vector<double> took_ms, grown_mib, destroy_ms;
    std::vector<sclComm_t> kept;
    size_t wrong = 0;
    // Destroys a child, timed (the slowest rank's).
    const auto destroy = [&](sclComm_t child) {
      const auto t0 = std::chrono::steady_clock::now();
      require_on_child(sclCommDestroy(child), "sclCommDestroy of the child", child);
      destroy_ms.push_back(most(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
          world));
    };
    const uint64_t at_first = resident_bytes();
    for (int r = 0; r < repeats; ++r) {
      require(sclBarrier(world, nullptr), "sclBarrier");
      const uint64_t before = resident_bytes();
      const auto t0 = std::chrono::steady_clock::now();
      sclComm_t child = nullptr;
      require(sclCommSplit(world, 0, rank, &child, nullptr), "sclCommSplit");
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      int32_t one = 1, sum = 0;  // the child works: every rank's 1, summed
      require_on_child(sclAllReduce(&one, &sum, 1, sclInt32, sclSum, child, nullptr),
                       "sclAllReduce on the child", child);
      if (sum != n) ++wrong;
      const uint64_t after = resident_bytes();
      if (keep) {
        kept.push_back(child);
      } else {
        require(sclBarrier(world, nullptr), "sclBarrier");
        destroy(child);
      }
      took_ms.push_back(most(ms, world));
      grown_mib.push_back(most(after > before ? double(after - before) / (1 << 20) : 0, world));
    }
    double held_mib = 0;  // --keep: what the children hold together, over their number
    if (keep) {
      const uint64_t at_last = resident_bytes();
      held_mib =
          most(at_last > at_first ? double(at_last - at_first) / (1 << 20) / repeats : 0, world);
      require(sclBarrier(world, nullptr), "sclBarrier");
      for (sclComm_t child : kept) destroy(child);
    }
    const double wrong_anywhere = most(double(wrong), world);
    if (rank == 0) {
      std::vector<double> t = took_ms;
      std::sort(t.begin(), t.end());
      std::printf(
          "split ranks=%d repeats=%d%s: sclCommSplit %.1f ms median (fastest %.1f, slowest %.1f; "
          "the slowest rank's), the first %.1f ms; resident memory a child adds %.1f MiB median "
          "(the most of any rank)",
          n, repeats, keep ? " kept" : "", t[t.size() / 2], t.front(), t.back(), took_ms.front(),
          median(grown_mib));
      if (keep) std::printf(", %.1f MiB a child held together", held_mib);
      std::printf("; sclCommDestroy %.1f ms median; %s\n", median(destroy_ms),
                  wrong_anywhere ? "WRONG" : "every child's sum checked: ok");
    }
    require(sclCommDestroy(world), "sclCommDestroy");
    return wrong_anywhere ? 1 : 0;
  } catch (const LibraryError& error) {
    const char* detail = error.detail().empty() ? sclGetLastError(world) : error.detail().c_str();
    std::fprintf(stderr, "scl-bench split: %s failed: %s: %s\n", error.call().c_str(),
                 sclGetErrorString(error.result()), detail);
    if (world != nullptr) sclCommAbort(world);
    return 3;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "scl-bench split: %s\n", error.what());
    if (world != nullptr) sclCommAbort(world);
    return 3;
  }
}

}  // namespace stratacl::bench
