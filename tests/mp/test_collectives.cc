// Case `collectives`: every collective x every dtype x every op (reducing collectives) x counts
// {0, 1, 7, 4097} x buffer placements (heap, malloc, registered and mixes; in place in each
// where the collective has an in-place form) x roots {0, n-1}, each call checked element
// by element on every rank (data, untouched inputs and guards).
//
// Pass 1 runs that whole matrix on the world communicator. Pass 2 repeats the part that goes
// through the staging area (placements with a malloc buffer, counts 1 and 4097) on a
// communicator split off with the smallest staging area (64 KiB), so that foreign buffers are
// cut into several rounds.
//
// The full matrix is ~8000 calls per pass; on this 2-core machine 8 ranks run it in a few
// seconds. `collectives --thin` runs a deterministic subset for slow builds (sanitizers):
//   - reducing collectives run every op at counts 1 and 7 and at count 4097 for a rotating op
//     per dtype; count 0 runs with op sum only;
//   - each (collective, dtype, op, count) runs two of the placements, rotating through all of
//     them, one with root 0 and the other with root n-1 (rooted collectives).
// Every (collective, dtype, op) combination still runs several times.
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
    {"registered+1", Mem::kRegistered, 1, Mem::kRegistered, 1, false},
    {"send-registered/recv-heap", Mem::kRegistered, 0, Mem::kHeap, 0, false},
    {"registered", Mem::kRegistered, 0, Mem::kRegistered, 0, true},
};

struct MatrixOptions {
  const char* label;
  bool full;
  std::vector<size_t> counts;
  bool staged_only;  // only placements with a malloc buffer
};

// Runs the matrix on `comm`; returns the number of calls.
uint64_t run_matrix(const Comm& comm, const MatrixOptions& opt, uint64_t& call_index) {
  Tally& tally = global_tally();
  const bool full = opt.full;
  uint64_t total_calls = 0;
  for (Coll coll : kAllColls) {
    const double t0 = now();
    uint64_t calls = 0;
    const uint64_t failed_before = tally.failed();
    for (size_t ti = 0; ti < std::size(kAllDtypes); ++ti) {
      const sclDataType_t dtype = kAllDtypes[ti];
      if (coll == Coll::kBarrier) {
        CallSpec spec;
        spec.coll = coll;
        spec.dtype = dtype;
        spec.placement = kPlacements[0];
        spec.seed = ref::make_seed(++call_index);
        spec.context = opt.label;
        run_and_verify(comm, spec, tally);
        ++calls;
        continue;
      }
      std::vector<int> ops;
      if (reduces(coll)) {
        for (sclRedOp_t op : kAllOps) ops.push_back(int(op));
      } else {
        ops.push_back(-1);
      }
      for (size_t oi = 0; oi < ops.size(); ++oi) {
        const int op = ops[oi];
        for (size_t ci = 0; ci < opt.counts.size(); ++ci) {
          const size_t count = opt.counts[ci];
          if (!full && reduces(coll)) {
            const bool every_op = count == 1 || count == 7;
            const bool rotating = count > 7 && oi == (ti + ci) % ops.size();
            const bool zero = count == 0 && op == sclSum;
            if (!every_op && !rotating && !zero) continue;
          }
          std::vector<int> roots{-1};
          if (rooted(coll)) {
            roots = {0};
            if (comm.n > 1) roots.push_back(comm.n - 1);
          }
          // The (placement, root) variants of this combination.
          std::vector<size_t> placements;
          for (size_t pi = 0; pi < std::size(kPlacements); ++pi) {
            const Placement& pl = kPlacements[pi];
            if (pl.in_place && !has_in_place(coll)) continue;
            auto foreign = [](Mem m) { return m != Mem::kHeap; };
            const bool staged = foreign(pl.recv_mem) || (!pl.in_place && foreign(pl.send_mem));
            if (opt.staged_only && !staged) continue;
            placements.push_back(pi);
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
            spec.seed = ref::make_seed(++call_index, v);
            spec.context = opt.label;
            run_and_verify(comm, spec, tally);
            ++calls;
          }
        }
      }
    }
    if (world().rank == 0) {
      printf("collectives: %-12s %-14s %5llu calls in %6.2f s%s\n", opt.label, coll_name(coll),
             (unsigned long long)calls, now() - t0,
             tally.failed() > failed_before ? " (rank 0 saw FAILURES)" : "");
    }
    total_calls += calls;
  }
  return total_calls;
}

}  // namespace

int run_collectives(int argc, char** argv) {
  const Comm& w = world();
  bool full = true;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--thin") == 0) {
      full = false;
    } else {
      fatal("collectives: unknown argument '%s' (expected --thin)", argv[i]);
    }
  }
  uint64_t call_index = 0;
  const double start = now();
  if (w.rank == 0) {
    printf("collectives: %d ranks, %s matrix\n", w.n, full ? "full" : "thinned");
  }
  const uint64_t calls1 =
      run_matrix(w, MatrixOptions{"world", full, {0, 1, 7, 4097}, false}, call_index);

  // Pass 2: a duplicate of the world with the smallest staging area.
  sclConfig_t config = SCL_CONFIG_INITIALIZER;
  config.stagingBytes = 64 * 1024;
  config.commName = "mp-small-staging";
  sclComm_t small = nullptr;
  MP_OK(sclCommSplit(w.comm, 0, w.rank, &small, &config));
  const Comm sc = describe(small);
  if (sc.rank != w.rank || sc.n != w.n) {
    fatal("split(color 0, key rank): rank %d of %d, expected %d of %d", sc.rank, sc.n, w.rank, w.n);
  }
  const uint64_t calls2 =
      run_matrix(sc, MatrixOptions{"staging64K", full, {1, 4097}, true}, call_index);
  MP_OK(sclCommDestroy(small));

  if (w.rank == 0) {
    printf("collectives: %llu + %llu calls, total %.2f s\n", (unsigned long long)calls1,
           (unsigned long long)calls2, now() - start);
  }
  return finish("collectives");
}

}  // namespace mp
