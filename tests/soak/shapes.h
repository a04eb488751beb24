// The soak's communicators (soak.cc): the world and three splits of it, whose shapes (colours,
// keys, staging area) are drawn again at each re-creation.
#pragma once

#include <cstdint>
#include <string>

#include "draw.h"

namespace soak {

// The communicators: the world; "halves" (contiguous, interleaved, or contiguous with reversed
// keys); "dup" (every rank: keys reversed, rotated, or all equal); "partial" (all ranks but one).
enum SlotId { kWorld, kHalves, kDup, kPartial, kNumSlots };

// What a split communicator looks like: drawn at each re-creation.
struct Shape {
  int variant = 0;
  uint64_t param = 0;      // dup: rotation; partial: the rank left out
  long long staging = -1;  // config stagingBytes; -1: inherit the world's
  int generation = 0;
};

// Colour and key of world rank r in a communicator of `slot` with `shape`.
void color_key(int slot, const Shape& s, int r, int n, int* color, int* key);
Shape draw_shape(Rng& rng, int slot, int generation);
// "halves#3(interleaved)[staging=64K]": the slot, its generation, variant and staging area.
std::string shape_name(int slot, const Shape& s, int n);

}  // namespace soak
