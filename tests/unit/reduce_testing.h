// What the conversion and reduction tests check src/reduce against: the narrow float formats
// (fp16, bf16, fp8 e4m3 and e5m2) described from their definitions, independently of
// reduce/convert.h; typed loads and stores; random inputs; the ISAs this machine runs.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "reduce/convert.h"
#include "reduce/reduce.h"

namespace stratacl::reduce::test_support {

inline uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
inline float float_of(uint32_t u) { return std::bit_cast<float>(u); }

struct NarrowFormat {
  const char* name;
  int bits, exp_bits, man_bits, bias;
  bool has_inf;   // top exponent is inf/NaN (fp16, bf16, e5m2); else only all-ones is NaN
  bool saturate;  // finite overflow goes to the largest finite value (fp8)
  uint32_t canonical_nan;
  float (*widen)(uint32_t);
  uint32_t (*narrow)(float);

  uint32_t sign_bit() const { return 1u << (bits - 1); }
  uint32_t exp_max() const { return (1u << exp_bits) - 1; }
  uint32_t man_mask() const { return (1u << man_bits) - 1; }
  uint32_t inf_code() const { return exp_max() << man_bits; }
  bool is_nan(uint32_t c) const {
    const uint32_t e = (c >> man_bits) & exp_max(), m = c & man_mask();
    return has_inf ? (e == exp_max() && m != 0) : (e == exp_max() && m == man_mask());
  }
  // The value of a code, from the definition of the format.
  double value(uint32_t c) const {
    const uint32_t e = (c >> man_bits) & exp_max(), m = c & man_mask();
    const double sign = (c & sign_bit()) ? -1.0 : 1.0;
    if (is_nan(c)) return std::numeric_limits<double>::quiet_NaN();
    if (has_inf && e == exp_max()) return sign * std::numeric_limits<double>::infinity();
    if (e == 0) return sign * std::ldexp(double(m), 1 - bias - man_bits);
    return sign * std::ldexp(1.0 + std::ldexp(double(m), -man_bits), int(e) - bias);
  }
};

inline const NarrowFormat kFp16{dtype_name(sclFloat16),
                                16,
                                5,
                                10,
                                15,
                                true,
                                false,
                                0x7E00,
                                [](uint32_t c) { return half_to_float(uint16_t(c)); },
                                [](float f) -> uint32_t { return float_to_half(f); }};
inline const NarrowFormat kBf16{dtype_name(sclBfloat16),
                                16,
                                8,
                                7,
                                127,
                                true,
                                false,
                                0x7FC0,
                                [](uint32_t c) { return bf16_to_float(uint16_t(c)); },
                                [](float f) -> uint32_t { return float_to_bf16(f); }};
inline const NarrowFormat kE4m3{dtype_name(sclFloat8e4m3),
                                8,
                                4,
                                3,
                                7,
                                false,
                                true,
                                0x7F,
                                [](uint32_t c) { return e4m3_to_float(uint8_t(c)); },
                                [](float f) -> uint32_t { return float_to_e4m3(f); }};
inline const NarrowFormat kE5m2{dtype_name(sclFloat8e5m2),
                                8,
                                5,
                                2,
                                15,
                                true,
                                true,
                                0x7E,
                                [](uint32_t c) { return e5m2_to_float(uint8_t(c)); },
                                [](float f) -> uint32_t { return float_to_e5m2(f); }};
inline const NarrowFormat* const kFormats[] = {&kFp16, &kBf16, &kE4m3, &kE5m2};

// The format of a narrow float type; nullptr for the others.
inline const NarrowFormat* narrow_format(sclDataType_t dt) {
  switch (dt) {
    case sclFloat16:
      return &kFp16;
    case sclBfloat16:
      return &kBf16;
    case sclFloat8e4m3:
      return &kE4m3;
    case sclFloat8e5m2:
      return &kE5m2;
    default:
      return nullptr;
  }
}

inline std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (isa_supported(isa)) out.push_back(isa);
  }
  return out;
}

template <class T>
T load_at(const unsigned char* p, size_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}
template <class T>
void store_at(unsigned char* p, size_t i, T v) {
  std::memcpy(p + i * sizeof(T), &v, sizeof(T));
}

using Srcs = std::vector<const unsigned char*>;

// Random inputs. Without allow_nan nothing is NaN, but float types get +-0, +-inf, subnormals and
// ordinary values, and fp8 gets values large enough for sums to saturate.
inline void fill_random(sclDataType_t dt, unsigned char* p, size_t count, std::mt19937_64& rng,
                        bool allow_nan) {
  std::uniform_real_distribution<double> nice(-8.0, 8.0);
  for (size_t i = 0; i < count; ++i) {
    const uint64_t r = rng();
    const unsigned pick = unsigned(r >> 56) % 16;
    switch (dt) {
      case sclFloat32:
      case sclFloat64: {
        double v;
        if (pick == 0) {
          v = (r & 1) ? -INFINITY : INFINITY;
        } else if (pick == 1) {
          v = (r & 1) ? -0.0 : 0.0;
        } else if (pick < 8) {
          v = nice(rng);
        } else if (pick < 10) {
          v = double(int(r % 7) - 3);  // exact small values: ties, cancellation, zeros
        } else {
          // Any bit pattern (huge, tiny, subnormal); redraw NaN unless allowed.
          if (dt == sclFloat32) {
            float f = float_of(uint32_t(r));
            while (!allow_nan && std::isnan(f)) f = float_of(uint32_t(rng()));
            store_at<float>(p, i, f);
          } else {
            double d = std::bit_cast<double>(r);
            while (!allow_nan && std::isnan(d)) d = std::bit_cast<double>(rng());
            store_at<double>(p, i, d);
          }
          continue;
        }
        if (dt == sclFloat32) {
          store_at<float>(p, i, float(v));
        } else {
          store_at<double>(p, i, v);
        }
        break;
      }
      case sclFloat16:
      case sclBfloat16:
      case sclFloat8e4m3:
      case sclFloat8e5m2: {
        const NarrowFormat& f = *narrow_format(dt);
        uint32_t c;
        if (pick == 0 && f.has_inf) {
          c = f.inf_code() | ((r & 1) ? f.sign_bit() : 0);
        } else if (pick < 8) {
          c = f.narrow(float(nice(rng)));
        } else {
          c = uint32_t(r) & ((1u << f.bits) - 1);
          while (!allow_nan && f.is_nan(c)) c = uint32_t(rng()) & ((1u << f.bits) - 1);
        }
        if (f.bits == 16) {
          store_at<uint16_t>(p, i, uint16_t(c));
        } else {
          p[i] = uint8_t(c);
        }
        break;
      }
      default:  // integers: any bits
        std::memcpy(p + i * dtype_size(dt), &r, dtype_size(dt));
        break;
    }
  }
}

}  // namespace stratacl::reduce::test_support
