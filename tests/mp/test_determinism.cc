// Case `determinism`: allreduce sum of random float32 and bfloat16 data with a wide dynamic
// range (so that any change of summation order changes the bits) must give
//   - bit-identical results on every rank (a 64-bit hash of each rank's result is allgathered);
//   - bit-identical results run after run, and whatever the buffer placement (heap, malloc,
//     in place);
//   - exactly the rank-order reduction computed by the reference from every rank's data (each
//     rank regenerates the others' inputs from their seeds).
// The ranks deliberately run different reduction kernels: before the library reads its
// environment, rank r sets STRATACL_ISA to avx512, avx2, scalar for r mod 3 = 0, 1, 2 (an
// unsupported ISA falls back to the best one below it), so the results must also agree across
// instruction sets. Counts cover the one-shot and the two-shot allreduce.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "buffers.h"
#include "core/hash.h"
#include "reduce/convert.h"
#include "reduce/reduce.h"
#include "reference.h"
#include "tests.h"

namespace mp {
namespace {

const char* isa_for_rank(int rank) {
  static const char* const kIsas[] = {"avx512", "avx2", "scalar"};
  return kIsas[rank % 3];
}

// Random data of `rank`: |v| in [2^-24, 2^24), random sign and mantissa.
void random_data(void* dst, sclDataType_t t, size_t count, uint64_t seed, int rank) {
  std::mt19937_64 gen(ref::make_seed(seed, uint64_t(rank)));
  std::uniform_int_distribution<int> exp_dist(-24, 23);
  std::uniform_real_distribution<float> mant_dist(1.0f, 2.0f);
  for (size_t i = 0; i < count; ++i) {
    float v = std::ldexp(mant_dist(gen), exp_dist(gen));
    if (gen() & 1) v = -v;
    if (t == sclFloat32) {
      static_cast<float*>(dst)[i] = v;
    } else {
      static_cast<uint16_t*>(dst)[i] = stratacl::reduce::float_to_bf16(v);
    }
  }
}

struct Variant {
  const char* name;
  Mem send_mem, recv_mem;
  bool in_place;
};
const Variant kVariants[] = {
    {"heap", Mem::kHeap, Mem::kHeap, false},
    {"malloc", Mem::kMalloc, Mem::kMalloc, false},
    {"heap in place", Mem::kHeap, Mem::kHeap, true},
    {"malloc->heap", Mem::kMalloc, Mem::kHeap, false},
};

}  // namespace

void determinism_before_init() {
  const char* r = std::getenv("STRATACL_RANK");
  if (!r) return;  // not under stratarun: keep the default
  setenv("STRATACL_ISA", isa_for_rank(std::atoi(r)), 1);
}

int run_determinism(int argc, char**) {
  if (argc != 0) fatal("determinism: takes no arguments");
  const Comm& w = world();
  Tally& tally = global_tally();
  if (w.rank == 0) {
    printf("determinism: %d ranks; rank r reduces with STRATACL_ISA=%s/%s/%s for r mod 3 = 0/1/2\n",
           w.n, isa_for_rank(0), isa_for_rank(1), isa_for_rank(2));
  }
  uint64_t* hashes = nullptr;  // allgather target
  MP_OK(sclMemAlloc(reinterpret_cast<void**>(&hashes), sizeof(uint64_t) * size_t(w.n)));
  uint64_t* my_hash = nullptr;
  MP_OK(sclMemAlloc(reinterpret_cast<void**>(&my_hash), sizeof(uint64_t)));

  // Which kernels each rank really uses (the library's own choice, after the fallback).
  *my_hash = uint64_t(stratacl::reduce::active_isa());
  MP_OK(sclAllGather(my_hash, hashes, 1, sclUint64, w.comm, nullptr));
  if (w.rank == 0) {
    printf("determinism: kernels in use:");
    for (int r = 0; r < w.n; ++r) {
      printf(" rank %d %s;", r, stratacl::reduce::isa_name(stratacl::reduce::Isa(hashes[r])));
    }
    printf("\n");
  }

  uint64_t seed = 0;
  for (sclDataType_t t : {sclFloat32, sclBfloat16}) {
    for (size_t count : {size_t(1000), size_t(100003), size_t(1 << 20) + 7}) {
      ++seed;
      const size_t es = dtype_size(t);
      CallInfo info;
      info.coll = "allreduce";
      info.dtype = t;
      info.op = sclSum;
      info.count = count;

      // The reference: every rank's data, reduced in rank order.
      std::vector<std::vector<unsigned char>> all(size_t(w.n),
                                                  std::vector<unsigned char>(count * es));
      std::vector<const void*> srcs;
      for (int r = 0; r < w.n; ++r) {
        random_data(all[size_t(r)].data(), t, count, seed, r);
        srcs.push_back(all[size_t(r)].data());
      }
      std::vector<unsigned char> expected(count * es);
      ref::reduce_arrays(expected.data(), srcs.data(), w.n, count, t, sclSum);

      std::vector<unsigned char> first;  // this rank's first result
      for (int run = 0; run < 2; ++run) {
        for (const Variant& v : kVariants) {
          info.detail = std::string("buffers=") + v.name + " run=" + std::to_string(run + 1);
          Buffer recv(v.recv_mem, t, count, run, 0xEE);
          Buffer send;
          if (v.in_place) {
            std::memcpy(recv.data(), all[size_t(w.rank)].data(), count * es);
          } else {
            send = Buffer(v.send_mem, t, count, 1 - run, 0xEE);
            std::memcpy(send.data(), all[size_t(w.rank)].data(), count * es);
          }
          MP_OK(sclAllReduce(v.in_place ? recv.data() : send.data(), recv.data(), count, t, sclSum,
                             w.comm, nullptr));
          // Against the reference, and against this rank's first result.
          tally.compare(info, "recv", recv.data(), expected.data(), count);
          if (first.empty()) {
            first.assign(recv.bytes(), recv.bytes() + count * es);
          } else {
            tally.compare(info, "recv vs first result", recv.data(), first.data(), count);
          }
          // Every rank holds the same bits.
          *my_hash = stratacl::fnv1a(stratacl::kFnvBasis, recv.data(), count * es);
          MP_OK(sclAllGather(my_hash, hashes, 1, sclUint64, w.comm, nullptr));
          bool same = true;
          for (int r = 0; r < w.n; ++r) same = same && hashes[r] == *my_hash;
          char what[160];
          snprintf(what, sizeof what,
                   "result hash differs between ranks (rank 0: %016llx, this rank: %016llx)",
                   (unsigned long long)hashes[0], (unsigned long long)*my_hash);
          tally.expect(same, info, what);
        }
      }
      if (w.rank == 0) {
        printf(
            "determinism: %-8s count=%-8zu: %zu allreduces, results identical across ranks, "
            "runs and placements: %s\n",
            dtype_name(t), count, 2 * std::size(kVariants), tally.failed() ? "NO" : "yes");
      }
    }
  }
  MP_OK(sclMemFree(hashes));
  MP_OK(sclMemFree(my_hash));
  return finish("determinism");
}

}  // namespace mp
