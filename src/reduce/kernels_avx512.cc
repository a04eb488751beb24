// AVX-512 kernels: kernels_impl.h auto-vectorised under -mavx512f/bw/vl/dq (src/CMakeLists.txt),
// plus 16-wide F16C-style conversions for fp16 tiles.
#include <immintrin.h>

#include "reduce/kernels_impl.h"
#include "reduce/reduce.h"

namespace stratacl::reduce::detail {
namespace {

// Matches convert.h bit for bit: vcvtph2ps is exact, and vcvtps2ph with an explicit
// round-to-nearest-even immediate ignores MXCSR.RC; NaNs are canonicalised before narrowing
// because vcvtps2ph would keep their payload.
struct F16cAvx512Cvt {
  static constexpr size_t kBytes = 2;

  template <size_t N>
  static void widen(float* __restrict out, const unsigned char* __restrict in) {
    static_assert(N % 16 == 0);
    for (size_t i = 0; i < N; i += 16) {
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 2 * i));
      _mm512_store_ps(out + i, _mm512_maskz_cvtph_ps(0xFFFF, h));
    }
  }

  template <size_t N>
  static void narrow(unsigned char* __restrict out, const float* __restrict in) {
    static_assert(N % 16 == 0);
    const __m512 qnan = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FC00000));
    for (size_t i = 0; i < N; i += 16) {
      __m512 v = _mm512_load_ps(in + i);
      v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v, qnan);
      const __m256i h = _mm512_maskz_cvtps_ph(0xFFFF, v, _MM_FROUND_TO_NEAREST_INT);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i), h);
    }
  }
};

}  // namespace

void reduce_n_avx512(void* dst, const void* const* srcs, int nsrc, size_t count,
                     sclDataType_t dt, sclRedOp_t op, int avg_divisor) {
  reduce_n_impl<F16cAvx512Cvt>(dst, srcs, nsrc, count, dt, op, avg_divisor);
}

}  // namespace stratacl::reduce::detail
