// cpu-gaps: how often this machine takes a CPU away from a thread that never waits. One thread
// pinned to each CPU reads the clock in a loop; a gap is a stretch between two reads in which
// the thread did not run: another task, an interrupt, or, on a virtual machine, the hypervisor
// holding the virtual CPU (then the guest's own tracing shows nothing at all in the gap, not
// even the timer tick: docs/PERFORMANCE.md, "Stalls of milliseconds: what this test bed adds").
// Run it on an idle machine before timing small collectives: every rank of a collective waits
// for the slowest, so a gap on any CPU is a stall of every rank.
//
//   cpu-gaps [-t SECONDS]
//
// Prints one line per CPU: gaps of 0.1-1, 1-3, 3-10 and over 10 ms, the longest, and the share
// of the time lost to gaps over 0.1 ms; then the machine's gaps over 1 ms per second.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

namespace {

int64_t now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

struct Gaps {
  int cpu = -1;
  std::array<long, 4> by_length{};  // 0.1-1 ms, 1-3 ms, 3-10 ms, 10 ms and more
  int64_t longest_ns = 0, lost_ns = 0, spun_ns = 0;
  bool pinned = false;
};

void spin(Gaps* g, int64_t seconds) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(g->cpu, &set);
  g->pinned = pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
  const int64_t start = now_ns(), end = start + seconds * 1000000000;
  int64_t last = start;
  for (int64_t t = start; t < end; last = t) {
    t = now_ns();
    const int64_t gap = t - last;
    if (gap < 100000) continue;
    const int bin = gap < 1000000 ? 0 : gap < 3000000 ? 1 : gap < 10000000 ? 2 : 3;
    ++g->by_length[size_t(bin)];
    g->longest_ns = std::max(g->longest_ns, gap);
    g->lost_ns += gap;
  }
  g->spun_ns = last - start;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t seconds = 5;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-t") == 0 && i + 1 < argc) {
      char* end = nullptr;
      seconds = std::strtoll(argv[++i], &end, 10);
      if (*end != '\0' || seconds < 1 || seconds > 3600) {
        std::fprintf(stderr, "cpu-gaps: -t takes whole seconds, 1-3600\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "usage: cpu-gaps [-t SECONDS]\n");
      return 2;
    }
  }
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    std::perror("cpu-gaps: sched_getaffinity");
    return 1;
  }
  std::vector<Gaps> gaps;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    gaps.emplace_back();
    gaps.back().cpu = cpu;
  }
  std::vector<std::thread> threads;
  for (Gaps& g : gaps) threads.emplace_back(spin, &g, seconds);
  for (std::thread& t : threads) t.join();
  long over_1ms = 0;
  for (const Gaps& g : gaps) {
    if (!g.pinned) {
      std::fprintf(stderr, "cpu-gaps: could not pin a thread to CPU %d\n", g.cpu);
      return 1;
    }
    std::printf(
        "cpu %d: gaps 0.1-1 ms %ld, 1-3 ms %ld, 3-10 ms %ld, >=10 ms %ld; longest %.2f ms;"
        " lost %.2f%%\n",
        g.cpu, g.by_length[0], g.by_length[1], g.by_length[2], g.by_length[3],
        double(g.longest_ns) / 1e6, 100.0 * double(g.lost_ns) / double(g.spun_ns));
    over_1ms += g.by_length[1] + g.by_length[2] + g.by_length[3];
  }
  std::printf("cpus %zu seconds %lld gaps_over_1ms_per_s %.2f\n", gaps.size(),
              static_cast<long long>(seconds), double(over_1ms) / double(seconds));
  return 0;
}
