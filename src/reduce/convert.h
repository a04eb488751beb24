// Scalar conversions between float32 and the narrow floating types StrataCL reduces: IEEE
// binary16 (fp16), bfloat16, and the OCP 8-bit formats e4m3 ("fn": no infinities, NaN = 0x7F/0xFF,
// max 448) and e5m2 (IEEE-like, with infinities).
//
// Contract (the reduction kernels and their tests rely on it):
//  - narrow -> float is exact, subnormals included. NaN stays NaN (quieted, payload kept).
//  - float -> narrow rounds to nearest, ties to even, subnormals exact. Every NaN becomes the one
//    canonical positive quiet NaN of the type (fp16 0x7E00, bf16 0x7FC0, e4m3 0x7F, e5m2 0x7E), so
//    that every kernel produces the same bits whatever NaN payloads arose inside it.
//  - Overflow: fp16 and bf16 go to +-inf as IEEE. fp8 saturates: a finite value that would round
//    above the largest finite value becomes +-max (e4m3 448, e5m2 57344). Infinity becomes +-448
//    in e4m3 (which has no inf) and stays +-inf in e5m2.
//
// Everything here is integer arithmetic plus exact small int->float conversions, so the results
// do not depend on the MXCSR rounding mode or on FTZ/DAZ. The functions are branch-free so the
// compiler can vectorise loops over them.
//
// The functions are always_inline on purpose: the ISA translation units (built with -mavx2 /
// -mavx512f) include this header, and an out-of-line copy emitted there could be picked by the
// linker for callers elsewhere and execute AVX-512 code on a CPU without it.
#pragma once

#include <cstdint>

namespace stratacl::reduce {
namespace convert_detail {

[[gnu::always_inline]] inline uint32_t float_bits(float f) {
  return __builtin_bit_cast(uint32_t, f);
}
[[gnu::always_inline]] inline float bits_float(uint32_t u) { return __builtin_bit_cast(float, u); }

// A narrow binary format: kExp exponent bits, kMan mantissa bits, exponent bias kBias.
// kIeee: the top exponent encodes inf/NaN (fp16, e5m2); otherwise only all-ones is NaN (e4m3).
template <int kExpBits, int kManBits, int kBiasValue, bool kIeeeSpecials>
struct Format {
  static constexpr int kExp = kExpBits, kMan = kManBits, kBias = kBiasValue;
  static constexpr bool kIeee = kIeeeSpecials;
  static constexpr uint32_t kExpMax = (1u << kExp) - 1;
  static constexpr uint32_t kManMask = (1u << kMan) - 1;
};
using Fp16 = Format<5, 10, 15, true>;
using E5m2 = Format<5, 2, 15, true>;
using E4m3 = Format<4, 3, 7, false>;

template <class F>
[[gnu::always_inline]] inline float narrow_to_float(uint32_t code) {
  const uint32_t sign = ((code >> (F::kExp + F::kMan)) & 1u) << 31;
  const uint32_t e = (code >> F::kMan) & F::kExpMax;
  const uint32_t m = code & F::kManMask;
  const uint32_t normal = ((e + uint32_t(127 - F::kBias)) << 23) | (m << (23 - F::kMan));
  // Subnormal: m * 2^(1 - bias - mbits). (float)m is exact, and lowering its exponent field is an
  // exact scaling that never reaches the float subnormal range: no FP multiply, no FTZ hazard.
  // The conversion is unconditional (m = 0 gives 0 - 0) so the compiler can vectorise the loop:
  // it will not speculate an FP operation that sits behind a condition.
  const uint32_t sub =
      float_bits(float(int32_t(m))) - (m ? uint32_t(F::kBias + F::kMan - 1) << 23 : 0u);
  uint32_t r = e ? normal : sub;
  if constexpr (F::kIeee) {
    const uint32_t special = 0x7F800000u | (m << (23 - F::kMan)) | (m ? 0x00400000u : 0u);
    r = e == F::kExpMax ? special : r;
  } else {
    r = (e == F::kExpMax && m == F::kManMask) ? 0x7FC00000u : r;
  }
  return bits_float(r | sign);
}

// Rounds the magnitude `a` (float bits without sign, not NaN) to the narrow format, to nearest
// even. Returns the unsigned code, not yet clamped: callers clamp overflow their own way.
template <class F>
[[gnu::always_inline]] inline uint32_t round_magnitude(uint32_t a) {
  constexpr uint32_t kShift = 23 - F::kMan;
  constexpr uint32_t kMinNormal = uint32_t(128 - F::kBias) << 23;  // float bits of 2^(1-bias)
  // Normal range: drop kShift mantissa bits with RNE; a carry rolls into the exponent correctly.
  const uint32_t normal = ((a + (1u << (kShift - 1)) - 1u + ((a >> kShift) & 1u)) >> kShift) -
                          (uint32_t(127 - F::kBias) << F::kMan);
  // Subnormal range: count = mant24 >> (151 - bias - mbits - exp), a shift of at least 14.
  // Shifts past 31 give 0 (the value is under a quarter of the smallest subnormal), so clamping
  // to 31 is exact and keeps the shift defined. Float subnormals and zero (exp 0) land there too.
  const uint32_t exp = a >> 23;
  const uint32_t mant = (a & 0x007FFFFFu) | 0x00800000u;
  uint32_t shift = uint32_t(151 - F::kBias - F::kMan) - exp;
  shift = shift > 31u ? 31u : shift;
  const uint32_t sub = (mant + ((1u << shift) >> 1) - 1u + ((mant >> shift) & 1u)) >> shift;
  return a < kMinNormal ? sub : normal;
}

[[gnu::always_inline]] inline uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }

}  // namespace convert_detail

[[gnu::always_inline]] inline float half_to_float(uint16_t h) {
  return convert_detail::narrow_to_float<convert_detail::Fp16>(h);
}

[[gnu::always_inline]] inline uint16_t float_to_half(float f) {
  const uint32_t x = convert_detail::float_bits(f);
  const uint32_t a = x & 0x7FFFFFFFu;
  // Anything that rounds past the largest finite value (65504), inf included, is inf (0x7C00).
  const uint32_t code =
      convert_detail::min_u32(convert_detail::round_magnitude<convert_detail::Fp16>(a), 0x7C00u);
  const uint32_t r = a > 0x7F800000u ? 0x7E00u : (code | ((x >> 16) & 0x8000u));
  return uint16_t(r);
}

[[gnu::always_inline]] inline float bf16_to_float(uint16_t b) {
  return convert_detail::bits_float(uint32_t(b) << 16);
}

[[gnu::always_inline]] inline uint16_t float_to_bf16(float f) {
  const uint32_t x = convert_detail::float_bits(f);
  // bf16 shares float's exponent, so RNE on the raw bits is exact for subnormals too, and a carry
  // out of the top finite value yields inf. The sign bit just rides along.
  const uint32_t rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
  const uint32_t r = (x & 0x7FFFFFFFu) > 0x7F800000u ? 0x7FC0u : rounded;
  return uint16_t(r);
}

[[gnu::always_inline]] inline float e4m3_to_float(uint8_t v) {
  return convert_detail::narrow_to_float<convert_detail::E4m3>(v);
}

[[gnu::always_inline]] inline uint8_t float_to_e4m3(float f) {
  const uint32_t x = convert_detail::float_bits(f);
  const uint32_t a = x & 0x7FFFFFFFu;
  // Saturate to 448 (0x7E); 0x7F is NaN. This also maps +-inf to +-448.
  const uint32_t code =
      convert_detail::min_u32(convert_detail::round_magnitude<convert_detail::E4m3>(a), 0x7Eu);
  const uint32_t r = a > 0x7F800000u ? 0x7Fu : (code | ((x >> 24) & 0x80u));
  return uint8_t(r);
}

[[gnu::always_inline]] inline float e5m2_to_float(uint8_t v) {
  return convert_detail::narrow_to_float<convert_detail::E5m2>(v);
}

[[gnu::always_inline]] inline uint8_t float_to_e5m2(float f) {
  const uint32_t x = convert_detail::float_bits(f);
  const uint32_t a = x & 0x7FFFFFFFu;
  // Finite overflow saturates to 57344 (0x7B); inf stays inf (0x7C).
  uint32_t code =
      convert_detail::min_u32(convert_detail::round_magnitude<convert_detail::E5m2>(a), 0x7Bu);
  code = a == 0x7F800000u ? 0x7Cu : code;
  const uint32_t r = a > 0x7F800000u ? 0x7Eu : (code | ((x >> 24) & 0x80u));
  return uint8_t(r);
}

}  // namespace stratacl::reduce
