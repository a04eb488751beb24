// Case `hosts`: one-way calls back to back across hosts keep pace with their receivers
// (net::Rail::kPaceCalls, STRATACL_NET_PACE_CALLS). A root that broadcasts back to back, and
// ranks that reduce back to back to a root, run at most that many calls ahead of the ranks they
// send to (in a tree of hosts, of each host below them), where nothing bounded them before and
// every message they were ahead piled up in the receiver's provider. With the receiving host's
// ranks late, a loop of three times that many calls must last until they arrive (a tree two
// hosts deep holds the root after two): without the pace it ends in milliseconds. Every call's
// result is checked, and each carries other values than the one before.
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "hosts.h"
#include "net/rail.h"

namespace mp {
namespace {

constexpr double kLateSeconds = 0.3;

int pace_calls() {
  const char* set = std::getenv("STRATACL_NET_PACE_CALLS");
  return set ? std::atoi(set) : int(stratacl::net::Rail::kPaceCalls);
}

uint64_t value(int rank, int call) {
  return (uint64_t(rank) << 40) ^ (uint64_t(call) * 0x9E3779B97F4A7C15ull);
}

// The ranks of `late_host` arrive kLateSeconds late; `held` ranks must wait for them.
void back_to_back(const Comm& w, Tally& tally, bool reduce, int root, int late_host, bool held) {
  const bool late = w.rank / ranks_per_host() == late_host;
  const CallInfo info{reduce ? "reduce" : "broadcast",
                      sclUint64,
                      reduce ? int(sclSum) : -1,
                      1,
                      root,
                      "back to back, host " + std::to_string(late_host) + " late"};
  MP_OK(sclBarrier(w.comm, nullptr));
  const double t0 = now();
  if (late) std::this_thread::sleep_for(std::chrono::duration<double>(kLateSeconds));
  int wrong = 0;
  const int calls = 3 * pace_calls();
  for (int i = 0; i < calls; ++i) {
    if (reduce) {
      const uint64_t mine = value(w.rank, i);
      uint64_t sum = 0, want = 0;
      MP_OK(sclReduce(&mine, &sum, 1, sclUint64, sclSum, root, w.comm, nullptr));
      for (int r = 0; r < w.n; ++r) want += value(r, i);
      wrong += w.rank == root && sum != want;
    } else {
      uint64_t buf = w.rank == root ? value(root, i) : 0;
      MP_OK(sclBroadcast(&buf, &buf, 1, sclUint64, root, w.comm, nullptr));
      wrong += buf != value(root, i);
    }
  }
  const double took = now() - t0;
  tally.expect(wrong == 0, info, std::to_string(wrong) + " of the calls wrong");
  if (held) {
    // Half the lateness: each rank's clock starts as it leaves the barrier, at its own moment;
    // without the pace the loop ends in milliseconds.
    tally.expect(took > 0.5 * kLateSeconds, info,
                 "this sender's calls ended after " + std::to_string(took) +
                     " s, before the late host arrived");
  }
  MP_OK(sclBarrier(w.comm, nullptr));
}

}  // namespace

void one_way_calls_keep_pace(const Comm& w, Tally& tally) {
  const int per_host = ranks_per_host(), hosts = w.n / per_host;
  const int host = w.rank / per_host, last = hosts - 1;
  // The root (rank 0) broadcasts to the last host, at the bottom of a tree of hosts.
  back_to_back(w, tally, false, 0, last, w.rank == 0);
  // The other hosts' rails with the root's local index send to the last host's root.
  const int root = w.n - 1;
  back_to_back(w, tally, true, root, last, host != last && w.rank % per_host == root % per_host);
}

}  // namespace mp
