// Case `step_wrap`: steps whose numbers wrap around 2^32. Before any call, every rank moves its
// step number to just before the wrap (a test hook of the communicator, the same value on every
// rank; no eager slot has been written), runs
// two normal steps (above the eager size), then an eager allreduce for which rank 1 is late: the
// eager slot of that step was never written, and it must not look like the current step, or the
// others read it before rank 1 writes it. Then eager and normal calls alternate across the wrap,
// with a late rank each time. Every element is checked.
#include <unistd.h>

#include <vector>

#include "comm/communicator.h"
#include "harness.h"
#include "tests.h"

namespace mp {
namespace {

void allreduce_checked(const Comm& w, Tally& tally, size_t count, int iteration, bool late) {
  std::vector<int64_t> x(count, int64_t(iteration + 1) * (w.rank + 1));
  if (late && w.rank == 1) usleep(100 * 1000);
  MP_OK(sclAllReduce(x.data(), x.data(), count, sclInt64, sclSum, w.comm, nullptr));
  CallInfo info;
  info.coll = "allreduce across the step wrap";
  info.dtype = sclInt64;
  info.count = count;
  info.detail = "iteration " + std::to_string(iteration);
  std::vector<int64_t> want(count, int64_t(iteration + 1) * w.n * (w.n + 1) / 2);
  tally.compare(info, "recvbuff", x.data(), want.data(), count);
}

}  // namespace

int run_step_wrap(int argc, char**) {
  if (argc != 0) fatal("step_wrap: takes no arguments");
  const Comm& w = world();
  if (w.n < 2) fatal("step_wrap: needs at least 2 ranks");
  Tally& tally = global_tally();
  // The first thing on the communicator (no step has run: every line is still at 0).
  auto* internal = static_cast<stratacl::Communicator*>(w.comm);
  const stratacl::Status moved = internal->set_step_for_testing(0xFFFFFFFDu);
  if (!moved.ok()) fatal("step_wrap: %s", moved.message().c_str());
  constexpr size_t kNormal = 1024, kEager = 4;     // 8 KiB and 32 B per rank
  allreduce_checked(w, tally, kNormal, 0, false);  // step 0xFFFFFFFE
  allreduce_checked(w, tally, kNormal, 1, false);  // step 0xFFFFFFFF
  allreduce_checked(w, tally, kEager, 2, true);    // the first step after the wrap: eager
  for (int i = 3; i < 40; ++i) allreduce_checked(w, tally, i % 3 ? kEager : kNormal, i, i % 5 == 0);
  return finish("step_wrap");
}

}  // namespace mp
