// AVX2 kernels: kernels_impl.h auto-vectorised under -mavx2 -mfma -mf16c (src/CMakeLists.txt),
// with the F16C tile converters of convert_simd.h on 8 floats a vector.
#include <immintrin.h>

#include <type_traits>

#include "reduce/convert_simd.h"
#include "reduce/kernels_impl.h"
#include "reduce/reduce.h"

namespace stratacl::reduce::detail {
namespace {

// convert_simd.h's primitives on 256-bit float vectors (halves and bytes in 128-bit ones).
struct Avx2Lanes {
  static constexpr size_t kLanes = 8;
  using F = __m256;
  using H = __m128i;
  using H2 = __m256i;

  static F load(const float* p) { return _mm256_load_ps(p); }
  static void store(float* p, F v) { _mm256_store_ps(p, v); }
  static F scale(F v, float s) { return _mm256_mul_ps(v, _mm256_set1_ps(s)); }
  static F canonical_nan(F v) {
    const F qnan = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000));
    return _mm256_blendv_ps(v, qnan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  static F to_float(H h) { return _mm256_cvtph_ps(h); }
  static H to_half(F v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }
  static H to_half_odd(F x) {
    const H truncated = _mm256_cvtps_ph(x, _MM_FROUND_TO_ZERO);
    const __m256i wide = _mm256_castps_si256(_mm256_cmp_ps(to_float(truncated), x, _CMP_NEQ_UQ));
    const H inexact =
        _mm_packs_epi32(_mm256_castsi256_si128(wide), _mm256_extracti128_si256(wide, 1));
    return _mm_or_si128(truncated, _mm_and_si128(inexact, _mm_set1_epi16(1)));
  }
  static H load_halves(const unsigned char* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  }
  static void store_halves(unsigned char* p, H h) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), h);
  }
  static H load_bytes(const unsigned char* p) {
    return _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  }
  static H2 join(H lo, H hi) { return _mm256_set_m128i(hi, lo); }
  static void store_bytes(unsigned char* p, H2 v) {
    const __m128i bytes =
        _mm_packus_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), bytes);
  }

  template <class V>
  static V splat(uint16_t v) {
    if constexpr (sizeof(V) == sizeof(H))  // H or H2
      return _mm_set1_epi16(short(v));
    else
      return _mm256_set1_epi16(short(v));
  }
  template <int k, class V>
  static V shl(V a) {
    if constexpr (sizeof(V) == sizeof(H))  // H or H2
      return _mm_slli_epi16(a, k);
    else
      return _mm256_slli_epi16(a, k);
  }
  template <int k, class V>
  static V shr(V a) {
    if constexpr (sizeof(V) == sizeof(H))  // H or H2
      return _mm_srli_epi16(a, k);
    else
      return _mm256_srli_epi16(a, k);
  }
  static H and_(H a, H b) { return _mm_and_si128(a, b); }
  static H2 and_(H2 a, H2 b) { return _mm256_and_si256(a, b); }
  static H or_(H a, H b) { return _mm_or_si128(a, b); }
  static H2 or_(H2 a, H2 b) { return _mm256_or_si256(a, b); }
  static H2 add(H2 a, H2 b) { return _mm256_add_epi16(a, b); }
  static H2 min_u16(H2 a, H2 b) { return _mm256_min_epu16(a, b); }
  static H select_eq(H a, H b, H x, H y) { return _mm_blendv_epi8(y, x, _mm_cmpeq_epi16(a, b)); }
  static H2 select_eq(H2 a, H2 b, H2 x, H2 y) {
    return _mm256_blendv_epi8(y, x, _mm256_cmpeq_epi16(a, b));
  }
  // Signed compare: every lane it sees is a half magnitude, below 0x8000.
  static H2 select_gt(H2 a, H2 b, H2 x, H2 y) {
    return _mm256_blendv_epi8(y, x, _mm256_cmpgt_epi16(a, b));
  }
};

}  // namespace

void reduce_n_avx2(void* dst, const void* const* srcs, int nsrc, size_t count, sclDataType_t dt,
                   sclRedOp_t op, int avg_divisor) {
  reduce_n_impl<SimdConverters<Avx2Lanes>>(dst, srcs, nsrc, count, dt, op, avg_divisor);
}

void weighted_sum_n_avx2(void* dst, const void* const* srcs, const float* weights, int nsrc,
                         size_t count, sclDataType_t dt) {
  weighted_sum_impl<SimdConverters<Avx2Lanes>>(dst, srcs, weights, nsrc, count, dt);
}

}  // namespace stratacl::reduce::detail
