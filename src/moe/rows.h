// Element work on token rows: fp8 quantisation in flight (bf16 -> e4m3 with one fp32 scale per
// 128 channels) and the fp32 accumulation of combine (widen, add, round once).
#pragma once

#include <cstddef>
#include <cstdint>

#include "stratacl/stratacl.h"

namespace stratacl::moe {

// Quantises one bf16 row of `hidden` channels (a multiple of 128) to e4m3: per 128-channel block,
// scale = max(amax, 1e-4) / 448, q = x / scale in fp32, rounded to nearest even onto the e4m3
// grid (subnormals included) and saturated. Writes hidden/128 scales.
void quantize_bf16_to_e4m3(const void* row, int hidden, void* out, float* scales);

// acc[i] += weight * row[i] for a row of `type` (bfloat16, float16 or float32): the product
// rounded to fp32, then the sum (src/CMakeLists.txt builds moe/ with -ffp-contract=off, so no
// compiler fuses them; weight 1 gives the plain sum, exactly).
void accumulate_row(float* acc, const void* row, sclDataType_t type, int hidden, float weight);
// Rounds acc to `type` once, to nearest even.
void store_row(void* out, const float* acc, sclDataType_t type, int hidden);

}  // namespace stratacl::moe
