#include "report.h"

#include <cinttypes>
#include <cstdio>

#include "calls.h"

namespace soak {

size_t coll_index(mp::Coll c) {
  for (size_t i = 0; i < kNumColls; ++i) {
    if (mp::kAllColls[i] == c) return i;
  }
  mp::fatal("unknown collective %d", int(c));
}

int report(const Stats& st, const mp::Comm& world, uint64_t seed, double elapsed,
           double seconds_requested) {
  // Per-rank figures summed over the world: [calls, failed, elements] per collective, then the
  // other counters.
  constexpr size_t kOther = 8;
  constexpr size_t kLen = 3 * kNumColls + kOther;
  uint64_t* sum = nullptr;
  uint64_t* per_rank = nullptr;
  MP_OK(sclMemAlloc(reinterpret_cast<void**>(&sum), kLen * sizeof(uint64_t)));
  MP_OK(sclMemAlloc(reinterpret_cast<void**>(&per_rank), 2 * size_t(world.n) * sizeof(uint64_t)));
  uint64_t my_calls = 0, my_failed = st.other_failed;
  for (size_t i = 0; i < kNumColls; ++i) {
    sum[i] = st.calls[i];
    sum[kNumColls + i] = st.failed[i];
    sum[2 * kNumColls + i] = st.elements[i];
    my_calls += st.calls[i];
    my_failed += st.failed[i];
  }
  const mp::Tally& tally = mp::global_tally();
  uint64_t* o = sum + 3 * kNumColls;
  o[0] = st.stream_calls;
  o[1] = st.overlap_calls;
  o[2] = st.other_checks;
  o[3] = st.other_failed;
  o[4] = tally.wrong_elements();
  o[5] = st.bytes;
  o[6] = tally.passed();
  o[7] = tally.failed();
  uint64_t mine[2] = {my_calls, my_failed};
  MP_OK(sclAllReduce(sum, sum, kLen, sclUint64, sclSum, world.comm, nullptr));
  MP_OK(sclAllGather(mine, per_rank, 2, sclUint64, world.comm, nullptr));

  uint64_t calls = 0, failed_calls = 0, elements = 0;
  for (size_t i = 0; i < kNumColls; ++i) {
    calls += sum[i];
    failed_calls += sum[kNumColls + i];
    elements += sum[2 * kNumColls + i];
  }
  const uint64_t other_failed = o[3];
  const uint64_t passed = calls - failed_calls;
  const uint64_t failed = failed_calls + other_failed;
  if (my_failed > 0) {
    fprintf(stderr,
            "soak: rank %d: %" PRIu64 " of %" PRIu64 " calls FAILED, %" PRIu64
            " other checks failed (%" PRIu64 " wrong elements)\n",
            world.rank, my_failed - st.other_failed, my_calls, st.other_failed,
            tally.wrong_elements());
  }
  if (world.rank == 0) {
    printf("soak: %d ranks, seed 0x%" PRIx64 ", %" PRIu64 " iterations in %.2f s", world.n, seed,
           st.iterations, elapsed);
    if (seconds_requested > 0) printf(" (%.0f s requested)", seconds_requested);
    printf("\n");
    printf("soak: calls checked: %" PRIu64 " on all ranks (%.1f per second), per rank:", calls,
           elapsed > 0 ? double(calls) / elapsed : 0.0);
    for (int r = 0; r < world.n; ++r) printf(" %" PRIu64, per_rank[2 * r]);
    printf("\n");
    printf("soak: elements checked: %" PRIu64 " (outputs, unchanged inputs, guards); %" PRIu64
           " wrong; payload %.1f MiB\n",
           elements, o[4], double(o[5]) / double(kMiB));
    printf("soak: of the calls, %" PRIu64 " queued on streams (%" PRIu64 " batches), %" PRIu64
           " blocking while streams ran\n",
           o[0], st.stream_batches, o[1]);
    printf("soak: communicators re-created: %" PRIu64 ", streams re-created: %" PRIu64
           "; other checks (membership, stream status, async errors): %" PRIu64 ", %" PRIu64
           " failed\n",
           st.comm_recreations, st.stream_recreations, o[2], other_failed);
    printf("soak: per collective (calls on all ranks, failed, elements):\n");
    for (size_t i = 0; i < kNumColls; ++i) {
      printf("soak:   %-14s %10" PRIu64 " %6" PRIu64 " %14" PRIu64 "\n",
             mp::coll_name(mp::kAllColls[i]), sum[i], sum[kNumColls + i], sum[2 * kNumColls + i]);
    }
    if (calls == 0) printf("soak: FAILED: no calls were checked\n");
    printf("%" PRIu64 " passed, %" PRIu64 " failed\n", passed, failed);
  }
  fflush(stdout);
  fflush(stderr);
  const bool bad = my_failed > 0 || failed > 0 || calls == 0 || o[7] > 0;
  MP_OK(sclMemFree(sum));
  MP_OK(sclMemFree(per_rank));
  return bad ? 1 : 0;
}

}  // namespace soak
