#include "shapes.h"

namespace soak {
namespace {

const char* const kSlotNames[kNumSlots] = {"world", "halves", "dup", "partial"};
constexpr int kVariants[kNumSlots] = {1, 3, 3, 2};

}  // namespace

void color_key(int slot, const Shape& s, int r, int n, int* color, int* key) {
  *color = 0;
  *key = r;
  switch (slot) {
    case kHalves:
      if (s.variant == 0) {
        *color = r < (n + 1) / 2 ? 0 : 1;
      } else if (s.variant == 1) {
        *color = r % 2;
      } else {
        *color = r < (n + 1) / 2 ? 0 : 1;
        *key = -r;
      }
      break;
    case kDup:
      if (s.variant == 0) {
        *key = n - r;
      } else if (s.variant == 1) {
        *key = int((uint64_t(r) + s.param) % uint64_t(n));
      } else {
        *key = 0;  // ties: ordered by world rank
      }
      break;
    case kPartial:
      *color = uint64_t(r) == s.param % uint64_t(n) ? SCL_SPLIT_NOCOLOR : 5;
      if (s.variant == 1) *key = -r;
      break;
    default:
      break;
  }
}

Shape draw_shape(Rng& rng, int slot, int generation) {
  Shape s;
  s.generation = generation;
  s.variant = int(rng.below(uint64_t(kVariants[slot])));
  s.param = rng.next();
  const uint64_t st = rng.below(4);
  s.staging = st == 0 ? 64 * 1024 : st == 1 ? 1024 * 1024 : -1;
  return s;
}

std::string shape_name(int slot, const Shape& s, int n) {
  static const char* const kNames[kNumSlots][3] = {
      {"", "", ""},
      {"contiguous", "interleaved", "contiguous-reversed"},
      {"reversed", "rotated", "equal-keys"},
      {"", "keys-reversed", ""}};
  std::string name = kSlotNames[slot];
  if (slot == kWorld) return name;
  name.append("#").append(std::to_string(s.generation));
  std::string v = kNames[slot][s.variant];
  if (slot == kPartial) {
    v = "without-" + std::to_string(s.param % uint64_t(n)) + (v.empty() ? "" : "," + v);
  }
  if (!v.empty()) name += "(" + v + ")";
  if (s.staging > 0) name += "[staging=" + std::to_string(s.staging / 1024) + "K]";
  return name;
}

}  // namespace soak
