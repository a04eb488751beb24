// AVX-512 kernels: kernels_impl.h auto-vectorised under -mavx512f/bw/vl/dq (src/CMakeLists.txt),
// with the F16C tile converters of convert_simd.h on 16 floats a vector.
//
// The _mm512_maskz_* forms with an all-ones mask are the plain operations: the unmasked
// intrinsics trip a false -Wmaybe-uninitialized in g++ 12's headers.
#include <immintrin.h>

#include <type_traits>

#include "reduce/convert_simd.h"
#include "reduce/kernels_impl.h"
#include "reduce/reduce.h"

namespace stratacl::reduce::detail {
namespace {

constexpr __mmask16 kAll = 0xFFFF;

// convert_simd.h's primitives on 512-bit float vectors (halves in 256-bit ones), with masks.
struct Avx512Lanes {
  static constexpr size_t kLanes = 16;
  using F = __m512;
  using H = __m256i;
  using H2 = __m512i;

  static F load(const float* p) { return _mm512_load_ps(p); }
  static void store(float* p, F v) { _mm512_store_ps(p, v); }
  static F scale(F v, float s) { return _mm512_mul_ps(v, _mm512_set1_ps(s)); }
  static F canonical_nan(F v) {
    const F qnan = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FC00000));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v, qnan);
  }
  static F to_float(H h) { return _mm512_maskz_cvtph_ps(kAll, h); }
  static H to_half(F v) { return _mm512_maskz_cvtps_ph(kAll, v, _MM_FROUND_TO_NEAREST_INT); }
  static H to_half_odd(F x) {
    const H truncated = _mm512_maskz_cvtps_ph(kAll, x, _MM_FROUND_TO_ZERO);
    const __mmask16 inexact = _mm512_cmp_ps_mask(to_float(truncated), x, _CMP_NEQ_UQ);
    return _mm256_or_si256(truncated, _mm256_maskz_mov_epi16(inexact, _mm256_set1_epi16(1)));
  }
  static H load_halves(const unsigned char* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  static void store_halves(unsigned char* p, H h) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), h);
  }
  static H load_bytes(const unsigned char* p) {
    return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static H2 join(H lo, H hi) {
    return _mm512_maskz_inserti64x4(0xFF, _mm512_castsi256_si512(lo), hi, 1);
  }
  static void store_bytes(unsigned char* p, H2 v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_maskz_cvtepi16_epi8(~0u, v));
  }

  template <class V>
  static V splat(uint16_t v) {
    if constexpr (sizeof(V) == sizeof(H))  // H or H2
      return _mm256_set1_epi16(short(v));
    else
      return _mm512_set1_epi16(short(v));
  }
  template <int k, class V>
  static V shl(V a) {
    if constexpr (sizeof(V) == sizeof(H))  // H or H2
      return _mm256_slli_epi16(a, k);
    else
      return _mm512_slli_epi16(a, k);
  }
  template <int k, class V>
  static V shr(V a) {
    if constexpr (sizeof(V) == sizeof(H))  // H or H2
      return _mm256_srli_epi16(a, k);
    else
      return _mm512_srli_epi16(a, k);
  }
  static H and_(H a, H b) { return _mm256_and_si256(a, b); }
  static H2 and_(H2 a, H2 b) { return _mm512_and_si512(a, b); }
  static H or_(H a, H b) { return _mm256_or_si256(a, b); }
  static H2 or_(H2 a, H2 b) { return _mm512_or_si512(a, b); }
  static H2 add(H2 a, H2 b) { return _mm512_add_epi16(a, b); }
  static H2 min_u16(H2 a, H2 b) { return _mm512_min_epu16(a, b); }
  static H select_eq(H a, H b, H x, H y) {
    return _mm256_mask_mov_epi16(y, _mm256_cmpeq_epi16_mask(a, b), x);
  }
  static H2 select_eq(H2 a, H2 b, H2 x, H2 y) {
    return _mm512_mask_mov_epi16(y, _mm512_cmpeq_epu16_mask(a, b), x);
  }
  static H2 select_gt(H2 a, H2 b, H2 x, H2 y) {
    return _mm512_mask_mov_epi16(y, _mm512_cmpgt_epu16_mask(a, b), x);
  }
};

}  // namespace

void reduce_n_avx512(void* dst, const void* const* srcs, int nsrc, size_t count, sclDataType_t dt,
                     sclRedOp_t op, int avg_divisor) {
  reduce_n_impl<SimdConverters<Avx512Lanes>>(dst, srcs, nsrc, count, dt, op, avg_divisor);
}

void weighted_sum_n_avx512(void* dst, const void* const* srcs, const float* weights, int nsrc,
                           size_t count, sclDataType_t dt) {
  weighted_sum_impl<SimdConverters<Avx512Lanes>>(dst, srcs, weights, nsrc, count, dt);
}

}  // namespace stratacl::reduce::detail
