// Case `mixed`: allreduce with even ranks in place and odd ranks out of place. In-place-ness is
// per rank (as in NCCL), and the library picks one-shot or two-shot from every rank's
// descriptor, so ranks that differ must still agree. Sizes from eager to several rounds, heap
// and malloc buffers, inputs changing per call, every element checked.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "buffers.h"
#include "reference.h"
#include "tests.h"

namespace mp {

int run_mixed(int argc, char**) {
  if (argc != 0) fatal("mixed: takes no arguments");
  const Comm& w = world();
  Tally& tally = global_tally();
  const sclDataType_t t = sclFloat32;
  const bool in_place = w.rank % 2 == 0;
  // On 2 ranks: 200 B eager; 4 KB one-shot (in place or not); 12 KiB and 160 KiB, one-shot if
  // every rank were out of place, two-shot here; 1.2 MiB; 16 MiB + 20 B, over several staging
  // rounds for malloc buffers.
  const size_t counts[] = {50, 1000, 3000, 40000, 300000, (size_t(1) << 22) + 5};
  uint64_t call = 0;
  for (Mem mem : {Mem::kHeap, Mem::kMalloc}) {
    for (size_t count : counts) {
      Buffer send(mem, t, count, 0, 0x3C), recv(mem, t, count, 1, 0x3C);
      std::vector<float> expected(count);
      for (int rep = 0; rep < 2; ++rep) {
        const uint64_t seed = ref::make_seed(0x313, ++call);
        void* src = in_place ? recv.data() : send.data();
        ref::fill_input(src, t, ref::Kind::kSum, seed, w.rank, 0, count);
        MP_OK(sclAllReduce(src, recv.data(), count, t, sclSum, w.comm, nullptr));
        ref::fill_reduced(expected.data(), t, sclSum, seed, w.n, 0, count);
        CallInfo info;
        info.coll = "allreduce";
        info.dtype = t;
        info.op = sclSum;
        info.count = count;
        info.detail =
            std::string(in_place ? "in place" : "out of place") + " (mixed ranks) " + mem_name(mem);
        std::vector<unsigned char> image = recv.image();
        std::memcpy(recv.image_data(image), expected.data(), count * sizeof(float));
        recv.check(tally, info, "recv", image);
      }
    }
  }
  if (w.rank == 0) printf("mixed: %llu allreduces checked\n", (unsigned long long)call);
  return finish("mixed");
}

}  // namespace mp
