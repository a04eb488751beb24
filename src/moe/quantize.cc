#include "moe/quantize.h"

#include <cmath>

#include "moe/plan.h"
#include "reduce/convert.h"

namespace stratacl::moe {

void quantize_bf16_to_e4m3(const void* row, int hidden, void* out, float* scales) {
  const auto* in = static_cast<const uint16_t*>(row);
  auto* q = static_cast<uint8_t*>(out);
  for (int b = 0; b < hidden / kScaleBlock; ++b) {
    float block[kScaleBlock];
    float amax = 0.0f;
    for (int i = 0; i < kScaleBlock; ++i) {
      block[i] = reduce::bf16_to_float(in[b * kScaleBlock + i]);
      amax = std::fmax(amax, std::fabs(block[i]));  // fmax: a NaN does not poison the scale
    }
    const float scale = std::fmax(amax, 1e-4f) / 448.0f;
    scales[b] = scale;
    for (int i = 0; i < kScaleBlock; ++i)
      q[b * kScaleBlock + i] = reduce::float_to_e4m3(block[i] / scale);
  }
}

}  // namespace stratacl::moe
