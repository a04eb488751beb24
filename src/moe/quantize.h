// fp8 quantisation in flight: bf16 rows to e4m3 with one fp32 scale per 128 channels, as dispatch
// writes them when recvType is fp8 and xType bf16.
#pragma once

namespace stratacl::moe {

// Quantises one bf16 row of `hidden` channels (a multiple of 128) to e4m3: per 128-channel block,
// scale = max(amax, 1e-4) / 448, q = x / scale in fp32, rounded to nearest even onto the e4m3
// grid (subnormals included) and saturated. Writes hidden/128 scales.
void quantize_bf16_to_e4m3(const void* row, int hidden, void* out, float* scales);

}  // namespace stratacl::moe
