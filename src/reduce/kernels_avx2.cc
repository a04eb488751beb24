// AVX2 kernels: kernels_impl.h auto-vectorised under -mavx2 -mfma -mf16c (src/CMakeLists.txt),
// plus hand-written tile converters for fp16 and fp8. The compiler does not use F16C on its own,
// and its vectorisation of the integer fp8 conversions of convert.h costs ~2 instructions per
// element; these are 2-4x cheaper and give the same bits (checked against convert.h for all 2^32
// floats when they were written; the unit test compares whole reductions).
//
// Why the fp8 paths are exact:
//  - e5m2 is the top byte of an fp16 (same exponent, 2 of its 10 mantissa bits), so widening is a
//    shift plus vcvtph2ps.
//  - e4m3 magnitude bits eeeemmm placed at bit 7 of a half read as 2^(e-15) * 1.mmm (or, for
//    e = 0, mmm * 2^-17); times 256 that is the e4m3 value, subnormals included. The product is a
//    power-of-two scaling of a normal float: exact.
//  - Narrowing rounds float -> fp16 to odd (truncate, then set the last bit if inexact) and then
//    fp16 -> fp8 to nearest even by integer rounding of the bit pattern. Rounding to odd with at
//    least 2 extra bits makes the double rounding equal to one RNE rounding. fp16 carries 8 (e5m2)
//    or 7 (e4m3) extra bits, also through the subnormals: e5m2 shares fp16's exponent range, and
//    e4m3 is handled as x * 2^-8, which maps its grid onto fp16's top 3 mantissa bits exactly
//    (2^-6 -> fp16's smallest normal). The scaling is exact unless x is below 2^-118, where the
//    result is +-0 either way. Truncation never overflows to inf, so only a real inf gives 0x7C00.
//  - vcvtps2ph takes its rounding mode from the immediate, not MXCSR.RC, and neither F16C
//    conversion flushes half subnormals under FTZ/DAZ. Only float subnormal inputs see DAZ, and
//    those round to +-0 in every fp8/fp16 format anyway.
#include <immintrin.h>

#include "reduce/kernels_impl.h"
#include "reduce/reduce.h"

namespace stratacl::reduce::detail {
namespace {

// 8 x 32-bit all-ones/zero lanes -> 8 x 16-bit lanes.
__m128i narrow_mask(__m256 m) {
  const __m256i i = _mm256_castps_si256(m);
  return _mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
}

__m128i float8_to_half_odd(__m256 x) {
  const __m128i truncated = _mm256_cvtps_ph(x, _MM_FROUND_TO_ZERO);
  const __m128i inexact = narrow_mask(_mm256_cmp_ps(_mm256_cvtph_ps(truncated), x, _CMP_NEQ_UQ));
  return _mm_or_si128(truncated, _mm_and_si128(inexact, _mm_set1_epi16(1)));
}

// Drops the low kDrop bits of non-negative half patterns, to nearest even.
template <int kDrop>
__m256i round_off_bits(__m256i a) {
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi16(a, kDrop), _mm256_set1_epi16(1));
  const __m256i bias = _mm256_set1_epi16((1 << (kDrop - 1)) - 1);
  return _mm256_srli_epi16(_mm256_add_epi16(_mm256_add_epi16(a, bias), lsb), kDrop);
}

__m256i sign_to_byte(__m256i h) {  // bit 15 of each half -> bit 7
  return _mm256_and_si256(_mm256_srli_epi16(h, 8), _mm256_set1_epi16(0x80));
}

__m128i load8_bytes_as_words(const unsigned char* p) {
  return _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

struct Fp16Cvt {
  static constexpr size_t kBytes = 2;

  template <size_t N>
  static void widen(float* __restrict out, const unsigned char* __restrict in) {
    static_assert(N % 8 == 0);
    for (size_t i = 0; i < N; i += 8) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i));
      _mm256_store_ps(out + i, _mm256_cvtph_ps(h));
    }
  }

  // NaNs are canonicalised first because vcvtps2ph would keep their payload.
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

// Narrowing does the float -> fp16 step 8 lanes at a time (that is the width of vcvtps2ph) and
// the integer fp16 -> fp8 step on 16 lanes. In that step a NaN is a > 0x7C00: vcvtps2ph quiets
// NaNs, so their mantissa stays non-zero.
// kScaleDown: multiply by 2^-8 first (e4m3, see the top of the file).
template <bool kScaleDown, class Finish>
void narrow_via_half(unsigned char* __restrict out, const float* __restrict in, size_t n,
                     Finish finish) {
  auto load = [&](size_t i) {
    const __m256 x = _mm256_load_ps(in + i);
    return kScaleDown ? _mm256_mul_ps(x, _mm256_set1_ps(0x1p-8f)) : x;
  };
  for (size_t i = 0; i < n; i += 16) {
    const __m128i lo = float8_to_half_odd(load(i));
    const __m128i hi = float8_to_half_odd(load(i + 8));
    const __m256i h = _mm256_set_m128i(hi, lo);
    const __m256i a = _mm256_and_si256(h, _mm256_set1_epi16(0x7FFF));
    __m256i code = _mm256_or_si256(finish(a), sign_to_byte(h));
    code = _mm256_blendv_epi8(code, finish.nan(), _mm256_cmpgt_epi16(a, _mm256_set1_epi16(0x7C00)));
    const __m128i bytes =
        _mm_packus_epi16(_mm256_castsi256_si128(code), _mm256_extracti128_si256(code, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), bytes);
  }
}

struct E5m2Cvt {
  static constexpr size_t kBytes = 1;

  template <size_t N>
  static void widen(float* __restrict out, const unsigned char* __restrict in) {
    static_assert(N % 8 == 0);
    for (size_t i = 0; i < N; i += 8) {
      const __m128i h = _mm_slli_epi16(load8_bytes_as_words(in + i), 8);
      _mm256_store_ps(out + i, _mm256_cvtph_ps(h));
    }
  }

  // Finite values saturate to 0x7B; inf (0x7C00, which truncation never makes) stays 0x7C.
  struct Finish {
    __m256i operator()(__m256i a) const {
      const __m256i code = _mm256_min_epu16(round_off_bits<8>(a), _mm256_set1_epi16(0x7B));
      const __m256i inf = _mm256_cmpeq_epi16(a, _mm256_set1_epi16(0x7C00));
      return _mm256_blendv_epi8(code, _mm256_set1_epi16(0x7C), inf);
    }
    __m256i nan() const { return _mm256_set1_epi16(0x7E); }
  };

  template <size_t N>
  static void narrow(unsigned char* __restrict out, const float* __restrict in) {
    static_assert(N % 16 == 0);
    narrow_via_half<false>(out, in, N, Finish{});
  }
};

struct E4m3Cvt {
  static constexpr size_t kBytes = 1;

  // The NaN code 0x7F would become 480; OR-ing 0x7C00 into its half (0x3F80) makes it a NaN.
  template <size_t N>
  static void widen(float* __restrict out, const unsigned char* __restrict in) {
    static_assert(N % 8 == 0);
    for (size_t i = 0; i < N; i += 8) {
      const __m128i w = load8_bytes_as_words(in + i);
      const __m128i mag = _mm_and_si128(w, _mm_set1_epi16(0x7F));
      const __m128i sign = _mm_slli_epi16(_mm_and_si128(w, _mm_set1_epi16(0x80)), 8);
      const __m128i nan =
          _mm_and_si128(_mm_cmpeq_epi16(mag, _mm_set1_epi16(0x7F)), _mm_set1_epi16(0x7C00));
      const __m128i h = _mm_or_si128(_mm_or_si128(_mm_slli_epi16(mag, 7), sign), nan);
      _mm256_store_ps(out + i, _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f)));
    }
  }

  // Everything past 448 (0x7E), inf included, saturates.
  struct Finish {
    __m256i operator()(__m256i a) const {
      return _mm256_min_epu16(round_off_bits<7>(a), _mm256_set1_epi16(0x7E));
    }
    __m256i nan() const { return _mm256_set1_epi16(0x7F); }
  };

  template <size_t N>
  static void narrow(unsigned char* __restrict out, const float* __restrict in) {
    static_assert(N % 16 == 0);
    narrow_via_half<true>(out, in, N, Finish{});
  }
};

struct Avx2Converters : GenericConverters {
  using Fp16 = Fp16Cvt;
  using E4m3 = E4m3Cvt;
  using E5m2 = E5m2Cvt;
};

}  // namespace

void reduce_n_avx2(void* dst, const void* const* srcs, int nsrc, size_t count, sclDataType_t dt,
                   sclRedOp_t op, int avg_divisor) {
  reduce_n_impl<Avx2Converters>(dst, srcs, nsrc, count, dt, op, avg_divisor);
}

}  // namespace stratacl::reduce::detail
