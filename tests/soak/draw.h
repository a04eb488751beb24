// The soak's random choices (soak.cc): the generator every rank runs alike, what an iteration
// does, and the calls it draws, before and after they meet a communicator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>

#include "calls.h"
#include "core/hash.h"

namespace soak {

constexpr size_t kKiB = 1024, kMiB = 1024 * 1024;
constexpr size_t kNumColls = std::size(mp::kAllColls);

// Shared random choices.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() { return stratacl::splitmix64(state_ += stratacl::kGoldenGamma); }
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
  double unit() { return double(next() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return unit() < p; }

 private:
  uint64_t state_;
};

// What an iteration does; drawn first, so that it can be recomputed cheaply (fast-forward).
enum class Action { kCall, kStreams, kRecreateComm, kRecreateStreams };
Action draw_action(Rng& rng);

// The largest buffer of a call, in bytes: 0 (4 %), else log-uniform in [1 B, 4 KiB) (50 %),
// [4 KiB, 256 KiB) (30 %), [256 KiB, 4 MiB) (13 %), [4 MiB, 8 MiB] (3 %).
size_t draw_bytes(Rng& rng);

// A call as drawn, before it meets a communicator (whose size sets the count and the root).
struct Drawn {
  mp::Coll coll = mp::Coll::kAllReduce;
  sclDataType_t dtype = sclFloat32;
  int op = -1;
  size_t bytes = 0;
  uint64_t root_draw = 0;
  bool in_place = false;
  mp::Mem send_mem = mp::Mem::kHeap, recv_mem = mp::Mem::kHeap;
  size_t send_offset = 0, recv_offset = 0;
  bool null_when_empty = false;
  uint64_t seed = 0;
};

// A call of at most `max_bytes`. `exact`: floating types reduce only by max and min, whose result
// no order of the soak's inputs (finite, non-zero) changes (the draw, and so the sequence, is the
// same; sum and avg become max, prod min): across hosts the hierarchy adds floats in another
// association than rank order, which the reference follows.
Drawn draw_call(Rng& rng, uint64_t seed, size_t max_bytes, bool exact);

// The call's spec on communicator `c`, whose size sets the count and the root; `context` names
// it in failure messages.
mp::CallSpec make_spec(const Drawn& d, const mp::Comm& c, const std::string& context);

}  // namespace soak
