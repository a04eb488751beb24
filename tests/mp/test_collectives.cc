// Case `collectives`: every collective x every dtype x every op (reducing collectives) x counts
// {0, 1, 7, 4097} x buffer placements (heap, malloc, the two mixes; in place in heap and in
// malloc where the collective has an in-place form) x roots {0, n-1}, each call checked element
// by element on every rank (data, untouched inputs and guards).
//
// The full matrix is ~8000 calls. On an oversubscribed machine (more ranks than cores) a call
// costs up to a millisecond or more, so for n >= 5 the matrix is thinned, deterministically and
// still covering every (collective, dtype, op) combination several times:
//   - reducing collectives run every op at counts 1 and 7 (one-shot / small paths) and at one
//     larger count (4097) for a rotating op per dtype; count 0 runs with op sum only;
//   - each (collective, dtype, op, count) runs two of the six placements, rotating so that all
//     six are used for every collective;
//   - of those two, one uses root 0 and the other root n-1 (rooted collectives).
// `collectives --full` runs the whole matrix whatever n is.
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "calls.h"
#include "reference.h"
#include "tests.h"

namespace mp {
namespace {

const Placement kPlacements[] = {
    {"heap", Mem::kHeap, 0, Mem::kHeap, 0, false},
    {"malloc+1", Mem::kMalloc, 1, Mem::kMalloc, 1, false},
    {"send-heap+1/recv-malloc", Mem::kHeap, 1, Mem::kMalloc, 0, false},
    {"send-malloc/recv-heap+1", Mem::kMalloc, 0, Mem::kHeap, 1, false},
    {"heap+1", Mem::kHeap, 0, Mem::kHeap, 1, true},
    {"malloc", Mem::kMalloc, 0, Mem::kMalloc, 0, true},
};
constexpr size_t kCounts[] = {0, 1, 7, 4097};

}  // namespace

int RunCollectives(int argc, char** argv) {
  const Comm& w = World();
  bool full = w.n <= 4;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--full") == 0) {
      full = true;
    } else {
      Fatal("collectives: unknown argument '%s' (expected --full)", argv[i]);
    }
  }
  Tally& tally = GlobalTally();
  uint64_t call_index = 0;
  const double start = Now();
  if (w.rank == 0) {
    printf("collectives: %d ranks, %s matrix\n", w.n, full ? "full" : "thinned");
  }

  for (Coll coll : kAllColls) {
    const double t0 = Now();
    uint64_t calls = 0;
    const uint64_t failed_before = tally.failed();
    for (size_t ti = 0; ti < std::size(kAllDtypes); ++ti) {
      const sclDataType_t dtype = kAllDtypes[ti];
      if (coll == Coll::kBarrier) {
        CallSpec spec;
        spec.coll = coll;
        spec.dtype = dtype;
        spec.placement = kPlacements[0];
        spec.seed = ref::MakeSeed(++call_index);
        RunAndVerify(w, spec, tally);
        ++calls;
        continue;
      }
      std::vector<int> ops;
      if (Reduces(coll)) {
        for (sclRedOp_t op : kAllOps) ops.push_back(int(op));
      } else {
        ops.push_back(-1);
      }
      for (size_t oi = 0; oi < ops.size(); ++oi) {
        const int op = ops[oi];
        for (size_t ci = 0; ci < std::size(kCounts); ++ci) {
          const size_t count = kCounts[ci];
          if (!full && Reduces(coll)) {
            const bool every_op = count == 1 || count == 7;
            const bool rotating = count == 4097 && oi == (ti + ci) % ops.size();
            const bool zero = count == 0 && op == sclSum;
            if (!every_op && !rotating && !zero) continue;
          }
          std::vector<int> roots{-1};
          if (Rooted(coll)) {
            roots = {0};
            if (w.n > 1) roots.push_back(w.n - 1);
          }
          // The (placement, root) variants of this combination.
          std::vector<size_t> placements;
          for (size_t pi = 0; pi < std::size(kPlacements); ++pi) {
            if (!kPlacements[pi].in_place || HasInPlace(coll)) placements.push_back(pi);
          }
          std::vector<std::pair<size_t, size_t>> variants;  // (placement, root index)
          if (full) {
            for (size_t pi : placements) {
              for (size_t ri = 0; ri < roots.size(); ++ri) variants.emplace_back(pi, ri);
            }
          } else {
            // Two placements, rotating through all of them; the two use different roots.
            const size_t np = placements.size();
            const size_t rot = (ti * 5 + oi * 3 + ci) % np;
            const size_t r0 = (ti + oi + ci) % roots.size();
            variants.emplace_back(placements[rot], r0);
            variants.emplace_back(placements[(rot + np / 2) % np], (r0 + 1) % roots.size());
          }
          for (size_t v = 0; v < variants.size(); ++v) {
            const auto [pi, ri] = variants[v];
            CallSpec spec;
            spec.coll = coll;
            spec.dtype = dtype;
            spec.op = op;
            spec.count = count;
            spec.root = roots[ri];
            spec.placement = kPlacements[pi];
            spec.null_when_empty = count == 0 && pi == 1;
            spec.seed = ref::MakeSeed(++call_index, v);
            RunAndVerify(w, spec, tally);
            ++calls;
          }
        }
      }
    }
    if (w.rank == 0) {
      printf("collectives: %-14s %5llu calls in %6.2f s%s\n", CollName(coll),
             (unsigned long long)calls, Now() - t0,
             tally.failed() > failed_before ? " (rank 0 saw FAILURES)" : "");
      fflush(stdout);
    }
  }
  if (w.rank == 0) printf("collectives: total %.2f s\n", Now() - start);
  return Finish("collectives");
}

}  // namespace mp
