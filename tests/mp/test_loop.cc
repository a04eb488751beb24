// Case `loop [iterations]`: many back-to-back small allreduces (default 10000 of 8 float32),
// the inputs changing with the iteration, every result checked. Alternates out-of-place and
// in-place calls on heap buffers, so a result left over from the previous iteration, or one
// computed from a peer's previous inputs, is caught. Rank 0 prints the elapsed time and the time
// per call (the library calls alone, and with the checks).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "buffers.h"
#include "reference.h"
#include "tests.h"

namespace mp {

int run_loop(int argc, char** argv) {
  long iterations = 10000;
  if (argc > 1) fatal("loop: usage: loop [iterations]");
  if (argc == 1) {
    char* end = nullptr;
    iterations = std::strtol(argv[0], &end, 10);
    if (*end != '\0' || iterations < 1) fatal("loop: bad iteration count '%s'", argv[0]);
  }
  const Comm& w = world();
  Tally& tally = global_tally();
  constexpr size_t kCount = 8;
  const sclDataType_t t = sclFloat32;
  Buffer send(Mem::kHeap, t, kCount, 0, 0xF5), recv(Mem::kHeap, t, kCount, 1, 0xF5);
  float expected[kCount];
  CallInfo info;
  info.coll = "allreduce";
  info.dtype = t;
  info.op = sclSum;
  info.count = kCount;

  MP_OK(sclBarrier(w.comm, nullptr));
  double in_calls = 0;
  const double start = now();
  for (long it = 0; it < iterations; ++it) {
    const uint64_t seed = ref::make_seed(0x100F, uint64_t(it));
    const bool in_place = it % 2 == 1;
    void* src = in_place ? recv.data() : send.data();
    ref::fill_input(src, t, ref::Kind::kSum, seed, w.rank, 0, kCount);
    const double t0 = now();
    const sclResult_t r = sclAllReduce(src, recv.data(), kCount, t, sclSum, w.comm, nullptr);
    in_calls += now() - t0;
    if (r != sclSuccess) {
      fatal("iteration %ld: sclAllReduce returned %d (%s): %s", it, int(r), sclGetErrorString(r),
            sclGetLastError(w.comm));
    }
    ref::fill_reduced(expected, t, sclSum, seed, w.n, 0, kCount);
    info.detail = std::string(in_place ? "buffers=heap+1 (in place)" : "buffers=heap -> heap+1") +
                  " iteration=" + std::to_string(it);
    tally.compare(info, "recv", recv.data(), expected, kCount);
  }
  const double elapsed = now() - start;
  // The guards around the output were never written.
  std::vector<unsigned char> image = recv.image();
  std::memcpy(recv.image_data(image), expected, sizeof expected);
  info.detail = "guards after the loop";
  recv.check(tally, info, "recv", image);
  if (w.rank == 0) {
    printf(
        "loop: %ld allreduces of %zu float32 on %d ranks in %.3f s: %.1f us per call "
        "(%.1f us in the library call on rank 0)\n",
        iterations, kCount, w.n, elapsed, 1e6 * elapsed / double(iterations),
        1e6 * in_calls / double(iterations));
  }
  return finish("loop");
}

}  // namespace mp
