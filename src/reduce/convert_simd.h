// Tile converters for fp16 and fp8 on F16C, written once for any vector width. An ISA translation
// unit instantiates SimdConverters<Lanes> with the primitives of its width (Avx2Lanes: 8 floats a
// vector, kernels_avx2.cc; Avx512Lanes: 16, kernels_avx512.cc); it includes this file under its own
// -m flags, and everything here has internal linkage, as kernels_impl.h explains. The compiler
// does not use F16C on its own, and its vectorisation of the integer fp8 conversions of
// convert.h costs ~2 instructions per element; these are 2-4x cheaper and give the same bits
// (checked against convert.h for all 2^32 floats when they were written; the unit tests compare
// whole reductions on every ISA against the scalar kernel).
//
// Why the fp8 paths are exact:
//  - e5m2 is the top byte of an fp16 (same exponent, 2 of its 10 mantissa bits), so widening is a
//    shift plus vcvtph2ps.
//  - e4m3 magnitude bits eeeemmm placed at bit 7 of a half read as 2^(e-15) * 1.mmm (or, for
//    e = 0, mmm * 2^-17); times 256 that is the e4m3 value, subnormals included. The product is a
//    power-of-two scaling of a normal float: exact. The NaN code 0x7F would become 480; OR-ing
//    0x7C00 into its half (0x3F80) makes it a NaN.
//  - Narrowing rounds float -> fp16 to odd (truncate, then set the last bit if inexact) and then
//    fp16 -> fp8 to nearest even by integer rounding of the bit pattern. Rounding to odd with at
//    least 2 extra bits makes the double rounding equal to one RNE rounding. fp16 carries 8 (e5m2)
//    or 7 (e4m3) extra bits, also through the subnormals: e5m2 shares fp16's exponent range, and
//    e4m3 is handled as x * 2^-8, which maps its grid onto fp16's top 3 mantissa bits exactly
//    (2^-6 -> fp16's smallest normal). The scaling is exact unless x is below 2^-118, where the
//    result is +-0 either way. Truncation never overflows to inf, so only a real inf gives 0x7C00.
//    In that step a NaN is a half magnitude above 0x7C00: vcvtps2ph quiets NaNs, so their
//    mantissa stays non-zero.
//  - vcvtps2ph takes its rounding mode from the immediate, not MXCSR.RC, and neither F16C
//    conversion flushes half subnormals under FTZ/DAZ. Only float subnormal inputs see DAZ, and
//    those round to +-0 in every fp8/fp16 format anyway.
//
// What a width provides (L = Lanes::kLanes):
//   F                 L floats;  H: L 16-bit lanes;  H2: 2L 16-bit lanes
//   load/store        F from/to aligned floats
//   scale(F, s)       F * s
//   canonical_nan(F)  NaN lanes become 0x7FC00000 (vcvtps2ph would keep a payload)
//   to_float(H)       vcvtph2ps;  to_half(F): vcvtps2ph, RNE;  to_half_odd(F): round to odd
//   load_halves, store_halves       L halves from/to unaligned memory
//   load_bytes(p)     L bytes, zero-extended to 16-bit lanes
//   join(lo, hi)      two H into one H2;  store_bytes(p, H2): the low byte of every lane
//   on H and H2:      splat<V>(v), and_, or_, add, min_u16, shl<k>, shr<k>,
//                     select_eq(a, b, x, y) and select_gt(a, b, x, y): a == b (a > b) ? x : y
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "reduce/kernels_impl.h"

namespace stratacl::reduce::detail {
namespace {

template <class L>
struct SimdFp16 {
  static constexpr size_t kBytes = 2;

  template <size_t N>
  static void widen(float* __restrict out, const unsigned char* __restrict in) {
    static_assert(N % L::kLanes == 0);
    for (size_t i = 0; i < N; i += L::kLanes)
      L::store(out + i, L::to_float(L::load_halves(in + 2 * i)));
  }
  template <size_t N>
  static void narrow(unsigned char* __restrict out, const float* __restrict in) {
    static_assert(N % L::kLanes == 0);
    for (size_t i = 0; i < N; i += L::kLanes)
      L::store_halves(out + 2 * i, L::to_half(L::canonical_nan(L::load(in + i))));
  }
};

// Drops the low kDrop bits of non-negative half patterns, to nearest even.
template <class L, int kDrop, class V>
V round_off_bits(V a) {
  const V lsb = L::and_(L::template shr<kDrop>(a), L::template splat<V>(1));
  return L::template shr<kDrop>(
      L::add(L::add(a, L::template splat<V>((1 << (kDrop - 1)) - 1)), lsb));
}

// float -> fp8 through fp16, 2L lanes at a time. kScaleDown: multiply by 2^-8 first (e4m3).
// Finish turns half magnitudes into fp8 magnitude codes (with the format's overflow rule).
template <class L, bool kScaleDown, class Finish>
void narrow_via_half(unsigned char* __restrict out, const float* __restrict in, size_t n) {
  using H2 = typename L::H2;
  auto half_odd = [&](size_t i) {
    const typename L::F x = L::load(in + i);
    return L::to_half_odd(kScaleDown ? L::scale(x, 0x1p-8f) : x);
  };
  for (size_t i = 0; i < n; i += 2 * L::kLanes) {
    const H2 h = L::join(half_odd(i), half_odd(i + L::kLanes));
    const H2 a = L::and_(h, L::template splat<H2>(0x7FFF));
    const H2 sign = L::and_(L::template shr<8>(h), L::template splat<H2>(0x80));
    const H2 code = L::or_(Finish::template code<L>(a), sign);
    L::store_bytes(out + i, L::select_gt(a, L::template splat<H2>(0x7C00),
                                         L::template splat<H2>(Finish::kNan), code));
  }
}

template <class L>
struct SimdE5m2 {
  static constexpr size_t kBytes = 1;
  // Finite values saturate to 0x7B; inf (0x7C00, which truncation never makes) stays 0x7C.
  struct Finish {
    static constexpr uint16_t kNan = 0x7E;
    template <class M, class V>
    static V code(V a) {
      const V c = M::min_u16(round_off_bits<M, 8>(a), M::template splat<V>(0x7B));
      return M::select_eq(a, M::template splat<V>(0x7C00), M::template splat<V>(0x7C), c);
    }
  };
  template <size_t N>
  static void widen(float* __restrict out, const unsigned char* __restrict in) {
    static_assert(N % L::kLanes == 0);
    for (size_t i = 0; i < N; i += L::kLanes)
      L::store(out + i, L::to_float(L::template shl<8>(L::load_bytes(in + i))));
  }
  template <size_t N>
  static void narrow(unsigned char* __restrict out, const float* __restrict in) {
    static_assert(N % (2 * L::kLanes) == 0);
    narrow_via_half<L, false, Finish>(out, in, N);
  }
};

template <class L>
struct SimdE4m3 {
  static constexpr size_t kBytes = 1;
  // Everything past 448 (0x7E), inf included, saturates.
  struct Finish {
    static constexpr uint16_t kNan = 0x7F;
    template <class M, class V>
    static V code(V a) {
      return M::min_u16(round_off_bits<M, 7>(a), M::template splat<V>(0x7E));
    }
  };
  template <size_t N>
  static void widen(float* __restrict out, const unsigned char* __restrict in) {
    static_assert(N % L::kLanes == 0);
    using H = typename L::H;
    for (size_t i = 0; i < N; i += L::kLanes) {
      const H w = L::load_bytes(in + i);
      const H mag = L::and_(w, L::template splat<H>(0x7F));
      const H sign = L::template shl<8>(L::and_(w, L::template splat<H>(0x80)));
      const H h = L::or_(L::template shl<7>(mag), sign);
      const H nan = L::or_(h, L::template splat<H>(0x7C00));
      L::store(out + i, L::scale(L::to_float(L::select_eq(mag, L::template splat<H>(0x7F), nan, h)),
                                 256.0f));
    }
  }
  template <size_t N>
  static void narrow(unsigned char* __restrict out, const float* __restrict in) {
    static_assert(N % (2 * L::kLanes) == 0);
    narrow_via_half<L, true, Finish>(out, in, N);
  }
};

template <class L>
struct SimdConverters : GenericConverters {
  using Fp16 = SimdFp16<L>;
  using E4m3 = SimdE4m3<L>;
  using E5m2 = SimdE5m2<L>;
};

}  // namespace
}  // namespace stratacl::reduce::detail
