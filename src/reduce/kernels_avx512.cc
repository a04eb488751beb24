// AVX-512 kernels: kernels_impl.h auto-vectorised under -mavx512f/bw/vl/dq (src/CMakeLists.txt),
// plus hand-written tile converters for fp16 and fp8. They are the algorithms of kernels_avx2.cc
// (see the comments there for why each step is exact) at twice the width, using mask registers.
//
// The _mm512_maskz_* forms with an all-ones mask are the plain operations: the unmasked
// intrinsics trip a false -Wmaybe-uninitialized in g++ 12's headers.
#include <immintrin.h>

#include "reduce/kernels_impl.h"
#include "reduce/reduce.h"

namespace stratacl::reduce::detail {
namespace {

constexpr __mmask16 kAll = 0xFFFF;

__m512 half16_to_float(__m256i h) { return _mm512_maskz_cvtph_ps(kAll, h); }

// float -> fp16 rounded to odd: truncate, then set the last bit if anything was cut off. A second
// RNE rounding of this value to fewer bits equals a single RNE rounding of x (fp16 keeps >= 2
// more bits than fp8 at every magnitude, subnormals included).
__m256i float16_to_half_odd(__m512 x) {
  const __m256i truncated = _mm512_maskz_cvtps_ph(kAll, x, _MM_FROUND_TO_ZERO);
  const __mmask16 inexact = _mm512_cmp_ps_mask(half16_to_float(truncated), x, _CMP_NEQ_UQ);
  return _mm256_or_si256(truncated, _mm256_maskz_mov_epi16(inexact, _mm256_set1_epi16(1)));
}

// Drops the low kDrop bits of non-negative half patterns, to nearest even.
template <int kDrop>
__m512i round_off_bits(__m512i a) {
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi16(a, kDrop), _mm512_set1_epi16(1));
  const __m512i bias = _mm512_set1_epi16((1 << (kDrop - 1)) - 1);
  return _mm512_srli_epi16(_mm512_add_epi16(_mm512_add_epi16(a, bias), lsb), kDrop);
}

// Narrowing: float -> fp16 16 lanes at a time, then the integer fp16 -> fp8 step on 32 lanes. A
// NaN is a > 0x7C00 there (vcvtps2ph quiets NaNs, so their mantissa stays non-zero).
// kScaleDown: multiply by 2^-8 first (e4m3, see kernels_avx2.cc).
template <bool kScaleDown, class Finish>
void narrow_via_half(unsigned char* __restrict out, const float* __restrict in, size_t n,
                     Finish finish) {
  auto load = [&](size_t i) {
    const __m512 x = _mm512_load_ps(in + i);
    return kScaleDown ? _mm512_mul_ps(x, _mm512_set1_ps(0x1p-8f)) : x;
  };
  for (size_t i = 0; i < n; i += 32) {
    const __m512i h =
        _mm512_maskz_inserti64x4(0xFF, _mm512_castsi256_si512(float16_to_half_odd(load(i))),
                                 float16_to_half_odd(load(i + 16)), 1);
    const __m512i a = _mm512_and_si512(h, _mm512_set1_epi16(0x7FFF));
    const __m512i sign = _mm512_and_si512(_mm512_srli_epi16(h, 8), _mm512_set1_epi16(0x80));
    __m512i code = _mm512_or_si512(finish(a), sign);
    code = _mm512_mask_mov_epi16(code, _mm512_cmpgt_epu16_mask(a, _mm512_set1_epi16(0x7C00)),
                                 finish.nan());
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm512_maskz_cvtepi16_epi8(0xFFFFFFFFu, code));
  }
}

struct Fp16Cvt {
  static constexpr size_t kBytes = 2;

  template <size_t N>
  static void widen(float* __restrict out, const unsigned char* __restrict in) {
    static_assert(N % 16 == 0);
    for (size_t i = 0; i < N; i += 16) {
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 2 * i));
      _mm512_store_ps(out + i, half16_to_float(h));
    }
  }

  // vcvtps2ph with an explicit RNE immediate ignores MXCSR.RC; NaNs are canonicalised first
  // because it would keep their payload.
  template <size_t N>
  static void narrow(unsigned char* __restrict out, const float* __restrict in) {
    static_assert(N % 16 == 0);
    const __m512 qnan = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FC00000));
    for (size_t i = 0; i < N; i += 16) {
      __m512 v = _mm512_load_ps(in + i);
      v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v, qnan);
      const __m256i h = _mm512_maskz_cvtps_ph(kAll, v, _MM_FROUND_TO_NEAREST_INT);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i), h);
    }
  }
};

struct E5m2Cvt {
  static constexpr size_t kBytes = 1;

  template <size_t N>
  static void widen(float* __restrict out, const unsigned char* __restrict in) {
    static_assert(N % 16 == 0);
    for (size_t i = 0; i < N; i += 16) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
      const __m256i h = _mm256_slli_epi16(_mm256_cvtepu8_epi16(b), 8);  // e5m2 = top byte of fp16
      _mm512_store_ps(out + i, half16_to_float(h));
    }
  }

  // Finite values saturate to 0x7B; inf (0x7C00, which truncation never makes) stays 0x7C.
  struct Finish {
    __m512i operator()(__m512i a) const {
      const __m512i code = _mm512_min_epu16(round_off_bits<8>(a), _mm512_set1_epi16(0x7B));
      return _mm512_mask_mov_epi16(code, _mm512_cmpeq_epu16_mask(a, _mm512_set1_epi16(0x7C00)),
                                   _mm512_set1_epi16(0x7C));
    }
    __m512i nan() const { return _mm512_set1_epi16(0x7E); }
  };

  template <size_t N>
  static void narrow(unsigned char* __restrict out, const float* __restrict in) {
    static_assert(N % 32 == 0);
    narrow_via_half<false>(out, in, N, Finish{});
  }
};

struct E4m3Cvt {
  static constexpr size_t kBytes = 1;

  // The NaN code 0x7F would become 480; OR-ing 0x7C00 into its half (0x3F80) makes it a NaN.
  template <size_t N>
  static void widen(float* __restrict out, const unsigned char* __restrict in) {
    static_assert(N % 16 == 0);
    for (size_t i = 0; i < N; i += 16) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
      const __m256i w = _mm256_cvtepu8_epi16(b);
      const __m256i mag = _mm256_and_si256(w, _mm256_set1_epi16(0x7F));
      const __m256i sign = _mm256_slli_epi16(_mm256_and_si256(w, _mm256_set1_epi16(0x80)), 8);
      __m256i h = _mm256_or_si256(_mm256_slli_epi16(mag, 7), sign);
      const __mmask16 nan = _mm256_cmpeq_epi16_mask(mag, _mm256_set1_epi16(0x7F));
      h = _mm256_mask_mov_epi16(h, nan, _mm256_or_si256(h, _mm256_set1_epi16(0x7C00)));
      _mm512_store_ps(out + i, _mm512_mul_ps(half16_to_float(h), _mm512_set1_ps(256.0f)));
    }
  }

  // Everything past 448 (0x7E), inf included, saturates.
  struct Finish {
    __m512i operator()(__m512i a) const {
      return _mm512_min_epu16(round_off_bits<7>(a), _mm512_set1_epi16(0x7E));
    }
    __m512i nan() const { return _mm512_set1_epi16(0x7F); }
  };

  template <size_t N>
  static void narrow(unsigned char* __restrict out, const float* __restrict in) {
    static_assert(N % 32 == 0);
    narrow_via_half<true>(out, in, N, Finish{});
  }
};

struct Avx512Converters : GenericConverters {
  using Fp16 = Fp16Cvt;
  using E4m3 = E4m3Cvt;
  using E5m2 = E5m2Cvt;
};

}  // namespace

void reduce_n_avx512(void* dst, const void* const* srcs, int nsrc, size_t count, sclDataType_t dt,
                     sclRedOp_t op, int avg_divisor) {
  reduce_n_impl<Avx512Converters>(dst, srcs, nsrc, count, dt, op, avg_divisor);
}

}  // namespace stratacl::reduce::detail
