// AVX2 kernels: kernels_impl.h auto-vectorised under -mavx2 -mfma -mf16c (src/CMakeLists.txt),
// plus F16C for fp16 tiles, which the compiler would not generate from the scalar conversion.
#include <immintrin.h>

#include "reduce/kernels_impl.h"
#include "reduce/reduce.h"

namespace stratacl::reduce::detail {
namespace {

// Matches convert.h bit for bit: vcvtph2ps is exact, and vcvtps2ph with an explicit
// round-to-nearest-even immediate ignores MXCSR.RC; NaNs are canonicalised before narrowing
// because vcvtps2ph would keep their payload.
struct F16cAvx2Cvt {
  static constexpr size_t kBytes = 2;

  template <size_t N>
  static void widen(float* __restrict out, const unsigned char* __restrict in) {
    static_assert(N % 8 == 0);
    for (size_t i = 0; i < N; i += 8) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i));
      _mm256_store_ps(out + i, _mm256_cvtph_ps(h));
    }
  }

  template <size_t N>
  static void narrow(unsigned char* __restrict out, const float* __restrict in) {
    static_assert(N % 8 == 0);
    const __m256 qnan = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000));
    for (size_t i = 0; i < N; i += 8) {
      __m256 v = _mm256_load_ps(in + i);
      v = _mm256_blendv_ps(v, qnan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), h);
    }
  }
};

}  // namespace

void reduce_n_avx2(void* dst, const void* const* srcs, int nsrc, size_t count, sclDataType_t dt,
                   sclRedOp_t op, int avg_divisor) {
  reduce_n_impl<F16cAvx2Cvt>(dst, srcs, nsrc, count, dt, op, avg_divisor);
}

}  // namespace stratacl::reduce::detail
