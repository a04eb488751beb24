// Case `large`: big counts, where calls are cut into rounds (staging area of 32 MiB for malloc
// buffers, partitioned two-shot allreduce for heap buffers), every element checked.
//   - float32 sum, L = 1Mi+3 and L = 16Mi: allreduce (count L), broadcast (count L, root n-1),
//     reducescatter (recvcount C), allgather (sendcount C), alltoall (count C per peer), with
//     C = L for 1Mi+3 and C = L/n for 16Mi (so that no buffer exceeds 16Mi elements = 64 MiB:
//     16Mi per rank chunk would mean 256 MiB buffers per rank at n = 4 on a shared machine);
//   - bfloat16, int8 and float64 allreduce sum, L = 1Mi+3;
// each with heap and malloc buffers (offset by one element), out of place and in place (not
// alltoall, which has no in-place form), and with registered buffers (CMA) out of place.
// With --small, only L = 1Mi+3: the sanitizer builds' run with workers and engines, where the
// staging area and the non-temporal copies' threshold are lowered to 1 MiB
// (tests/mp/CMakeLists.txt) so that these calls take the paths 16Mi takes with the defaults.
#include <cstdio>
#include <string>

#include "calls.h"
#include "reference.h"
#include "tests.h"

namespace mp {
namespace {

const Placement kLargePlacements[] = {
    {"heap", Mem::kHeap, 0, Mem::kHeap, 0, false},
    {"malloc+1", Mem::kMalloc, 1, Mem::kMalloc, 1, false},
    {"heap+1", Mem::kHeap, 0, Mem::kHeap, 1, true},
    {"malloc", Mem::kMalloc, 0, Mem::kMalloc, 0, true},
    {"registered+1", Mem::kRegistered, 1, Mem::kRegistered, 1, false},
};

}  // namespace

int run_large(int argc, char** argv) {
  const bool small = argc == 1 && std::string(argv[0]) == "--small";
  if (argc != 0 && !small) fatal("large: takes no arguments but --small");
  const Comm& w = world();
  Tally& tally = global_tally();
  uint64_t call_index = 0;
  const double start = now();

  auto run = [&](Coll coll, sclDataType_t dtype, int op, size_t count, int root) {
    for (const Placement& pl : kLargePlacements) {
      if (pl.in_place && !has_in_place(coll)) continue;
      CallSpec spec;
      spec.coll = coll;
      spec.dtype = dtype;
      spec.op = op;
      spec.count = count;
      spec.root = root;
      spec.placement = pl;
      spec.seed = ref::make_seed(0x1A46E, ++call_index);
      const double t0 = now();
      PreparedCall call(w, spec);
      const double t1 = now();
      const sclResult_t r = call.issue(nullptr);
      if (r != sclSuccess) {
        fatal("%s returned %d (%s): %s", call.info().text().c_str(), int(r), sclGetErrorString(r),
              sclGetLastError(w.comm));
      }
      const double t2 = now();
      const uint64_t wrong = call.verify(tally);
      if (w.rank == 0) {
        printf("large: %-13s %-8s %-4s count=%-9zu %-8s%s: call %6.1f ms, setup+check %6.1f ms%s\n",
               coll_name(coll), dtype_name(dtype), op_name(op), count, pl.name,
               pl.in_place ? " in place" : "         ", 1e3 * (t2 - t1),
               1e3 * (t1 - t0 + now() - t2), wrong ? " WRONG" : "");
      }
    }
  };

  for (size_t big : {size_t(1 << 20) + 3, size_t(16) << 20}) {
    if (small && big == (size_t(16) << 20)) break;
    const size_t chunk = big == (size_t(16) << 20) ? big / size_t(w.n) : big;
    run(Coll::kAllReduce, sclFloat32, sclSum, big, -1);
    run(Coll::kBroadcast, sclFloat32, -1, big, w.n - 1);
    run(Coll::kReduceScatter, sclFloat32, sclSum, chunk, -1);
    run(Coll::kAllGather, sclFloat32, -1, chunk, -1);
    run(Coll::kAlltoAll, sclFloat32, -1, chunk, -1);
  }
  for (sclDataType_t t : {sclBfloat16, sclInt8, sclFloat64}) {
    run(Coll::kAllReduce, t, sclSum, size_t(1 << 20) + 3, -1);
  }
  if (w.rank == 0) printf("large: total %.2f s\n", now() - start);
  return finish("large");
}

}  // namespace mp
