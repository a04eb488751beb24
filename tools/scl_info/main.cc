// scl-info: what this StrataCL build and machine will do: version, reduction ISA, heap capacity
// and use, the memory a communicator costs, the copy cost model and the worker counts it picks,
// and every configuration variable with its source. `scl-info --calibrate` measures the copy
// bandwidth of 1..cores threads against the model.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "comm/control_layout.h"
#include "core/config.h"
#include "exec/copy.h"
#include "exec/cost_model.h"
#include "fabric/heap.h"
#include "net/provider.h"
#include "reduce/reduce.h"
#include "stratacl/stratacl.h"
#include "sync/waiter.h"

using namespace stratacl;

namespace {

// The model's choices: threads per rank at each rank count, and parts for a few job sizes.
void print_model(const CostModel& m) {
  std::printf(
      "copy model      : %.1f GB/s per thread, %.1f GB/s per host (%d cores), %.0f us "
      "wake-up\n",
      m.thread_gbps, m.host_gbps, m.cores, m.wake_us);
  std::printf("auto threads    : per rank, for 1/2/4/8/16 ranks on this host:");
  for (int ranks : {1, 2, 4, 8, 16}) std::printf(" %d", m.auto_threads(ranks, 0));
  std::printf("\n");
  const size_t min = m.min_part_bytes();
  std::printf(
      "parts per job   : one per %zu bytes (STRATACL_WORKER_MIN_BYTES pins it); for "
      "64 KiB/256 KiB/1 MiB/4 MiB/16 MiB:",
      min);
  for (size_t kib : {64, 256, 1024, 4096, 16384})
    std::printf(" %d", m.parts_for(kib << 10, 64, min));
  std::printf(" (at most the team's size)\n");
}

// Copy bandwidth (read + write counted once, as memcpy GB/s) of `threads` threads, each copying
// its own 64 MiB, the median of 5 runs.
double measure_gbps(int threads) {
  const size_t bytes = 64 << 20;
  std::vector<std::vector<char>> src(static_cast<size_t>(threads)),
      dst(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    src[size_t(t)].assign(bytes, char(t));
    dst[size_t(t)].assign(bytes, 0);
  }
  std::vector<double> runs;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t)
      pool.emplace_back(
          [&, t] { copy_bytes(dst[size_t(t)].data(), src[size_t(t)].data(), bytes); });
    copy_bytes(dst[0].data(), src[0].data(), bytes);
    for (std::thread& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    runs.push_back(double(bytes) * threads / s / 1e9);
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

// Between hosts: what libfabric offers here and which one a communicator would take.
void print_network() {
  std::printf("\nnetwork (libfabric %u.%u), used only when ranks span hosts:\n",
              FI_MAJOR(fi_version()), FI_MINOR(fi_version()));
  Result<net::InfoPtr> chosen = net::choose_provider();
  std::printf("  chosen        : %s\n",
              chosen.ok() ? net::describe(**chosen).c_str() : chosen.status().message().c_str());
  for (const std::string& line : net::describe_candidates()) {
    std::printf("  offered       : %s\n", line.c_str());
  }
}

void calibrate(const CostModel& m) {
  std::printf("calibration (memcpy, 64 MiB per thread, median of 5):\n");
  std::printf("%8s %12s %12s\n", "threads", "measured", "model");
  for (int t = 1; t <= m.cores; ++t) {
    const double model =
        std::min(m.host_gbps, m.thread_gbps * (1 + (m.host_gbps / m.thread_gbps - 1) *
                                                       double(t - 1) / std::max(1, m.cores - 1)));
    std::printf("%8d %9.1f GB/s %7.1f GB/s\n", t, measure_gbps(t), model);
  }
  std::printf(
      "(STRATACL_HOST_GBPS set to the all-cores figure replaces the model's host bandwidth)\n");
}

}  // namespace

int main(int argc, char** argv) {
  const CostModel model = CostModel::for_host(usable_cpus(), double(process_value(Var::kHostGbps)));
  if (argc > 1 && std::strcmp(argv[1], "--calibrate") == 0) {
    print_model(model);
    calibrate(model);
    return 0;
  }
  int version = 0;
  sclGetVersion(&version);
  std::printf("StrataCL %d.%d.%d\n", version / 10000, version / 100 % 100, version % 100);
  std::printf("reduction ISA   : %s", reduce::isa_name(reduce::active_isa()));
  std::printf("  (supported:");
  for (reduce::Isa isa : {reduce::Isa::kAvx512, reduce::Isa::kAvx2, reduce::Isa::kScalar}) {
    if (reduce::isa_supported(isa)) std::printf(" %s", reduce::isa_name(isa));
  }
  std::printf(")\n");

  Result<Heap*> heap = Heap::instance();
  if (!heap.ok()) {
    std::printf("heap            : unavailable: %s\n", heap.status().message().c_str());
  } else {
    Heap::Stats s = (*heap)->stats();
    std::printf("heap capacity   : %llu bytes (sparse memfd; pages cost nothing until touched)\n",
                (unsigned long long)s.capacity);
    std::printf("heap in use     : %llu bytes in %llu blocks (peak %llu)\n",
                (unsigned long long)s.in_use, (unsigned long long)s.live_blocks,
                (unsigned long long)s.peak);
  }
  for (int n : {2, 8, 64}) {
    const ControlLayout layout = ControlLayout::of(n);
    std::printf("control block   : %zu bytes per rank for %d ranks (+ %zu bytes of doorbells)\n",
                layout.bytes(), n, layout.lines() * sizeof(Doorbell));
  }
  std::printf("staging area    : %lld bytes per communicator, touched only for foreign buffers\n",
              (long long)process_value(Var::kStagingBytes));
  print_model(model);
  print_network();

  std::printf("\n%-28s %-16s %-12s %s\n", "variable", "value", "source", "meaning");
  for (const VarSpec& v : all_vars()) {
    Result<Setting> s = process_setting(v.id);
    if (!s.ok()) {
      std::printf("%-28s %-16s %-12s %s\n", v.name, "INVALID", "environment",
                  s.status().message().c_str());
      continue;
    }
    std::printf("%-28s %-16s %-12s %s\n", v.name, s->text.c_str(), source_name(s->source), v.help);
  }
  return 0;
}
