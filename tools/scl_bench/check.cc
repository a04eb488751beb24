#include "check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/hash.h"
#include "reduce/convert.h"

namespace stratacl::bench {
namespace {

namespace cv = stratacl::reduce;

// Codecs turn the integers (or avg quotients) of the scheme into stored elements and back.
// kMoveBound is the magnitude bound of the kMove and kMinMax values: every integer up to it is
// exact in the type. Floating-point codecs also give the type's precision, for the avg
// tolerance.
template <typename T>
struct IntCodec {
  using Storage = T;
  static constexpr bool kInteger = true;
  static constexpr bool kUnsigned = std::is_unsigned_v<T>;
  static constexpr int64_t kMoveBound = sizeof(T) == 1 ? 63 : int64_t{1} << 20;
  static Storage encode(double v) { return static_cast<T>(v); }
  static double decode(Storage s) { return static_cast<double>(s); }
};

template <typename S, int kMantissa, int kMinExp, int64_t kBound>
struct FloatCodecBase {
  using Storage = S;
  static constexpr bool kInteger = false;
  static constexpr bool kUnsigned = false;
  static constexpr int kMantissaBits = kMantissa;
  static constexpr int kMinExponent = kMinExp;  // exponent of the smallest normal number
  static constexpr int64_t kMoveBound = kBound;
};

struct Float32Codec : FloatCodecBase<float, 23, -126, int64_t{1} << 20> {
  static float encode(double v) { return static_cast<float>(v); }
  static double decode(float s) { return s; }
};
struct Float64Codec : FloatCodecBase<double, 52, -1022, int64_t{1} << 20> {
  static double encode(double v) { return v; }
  static double decode(double s) { return s; }
};
struct HalfCodec : FloatCodecBase<uint16_t, 10, -14, 1024> {
  static uint16_t encode(double v) { return cv::float_to_half(static_cast<float>(v)); }
  static double decode(uint16_t s) { return cv::half_to_float(s); }
};
struct Bf16Codec : FloatCodecBase<uint16_t, 7, -126, 128> {
  static uint16_t encode(double v) { return cv::float_to_bf16(static_cast<float>(v)); }
  static double decode(uint16_t s) { return cv::bf16_to_float(s); }
};
struct E4m3Codec : FloatCodecBase<uint8_t, 3, -6, 16> {
  static uint8_t encode(double v) { return cv::float_to_e4m3(static_cast<float>(v)); }
  static double decode(uint8_t s) { return cv::e4m3_to_float(s); }
};
struct E5m2Codec : FloatCodecBase<uint8_t, 2, -14, 8> {
  static uint8_t encode(double v) { return cv::float_to_e5m2(static_cast<float>(v)); }
  static double decode(uint8_t s) { return cv::e5m2_to_float(s); }
};

// Calls visit.template operator()<Codec>() with the codec of `type`.
template <typename Visitor>
void visit_type(sclDataType_t type, Visitor&& visit) {
  switch (type) {
    case sclInt8:
      visit.template operator()<IntCodec<int8_t>>();
      break;
    case sclUint8:
      visit.template operator()<IntCodec<uint8_t>>();
      break;
    case sclInt32:
      visit.template operator()<IntCodec<int32_t>>();
      break;
    case sclUint32:
      visit.template operator()<IntCodec<uint32_t>>();
      break;
    case sclInt64:
      visit.template operator()<IntCodec<int64_t>>();
      break;
    case sclUint64:
      visit.template operator()<IntCodec<uint64_t>>();
      break;
    case sclFloat16:
      visit.template operator()<HalfCodec>();
      break;
    case sclFloat32:
      visit.template operator()<Float32Codec>();
      break;
    case sclFloat64:
      visit.template operator()<Float64Codec>();
      break;
    case sclBfloat16:
      visit.template operator()<Bf16Codec>();
      break;
    case sclFloat8e4m3:
      visit.template operator()<E4m3Codec>();
      break;
    case sclFloat8e5m2:
      visit.template operator()<E5m2Codec>();
      break;
    default:
      break;
  }
}

constexpr int kMaxContributors = 4;  // bounds sums and products whatever the rank count

// A well-mixed hash of (scheme, rank, index), so that shifted or swapped chunks do not line up
// with the expected pattern.
uint64_t mix(ValueScheme scheme, int rank, size_t index) {
  uint64_t x = static_cast<uint64_t>(index) * kGoldenGamma;
  x ^= (static_cast<uint64_t>(rank) + 1) * 0xC2B2AE3D27D4EB4Full;
  x ^= static_cast<uint64_t>(scheme) << 60;
  return mix64(x);
}

bool contributes(int nranks, int rank, size_t index) {
  const size_t n = static_cast<size_t>(nranks);
  const size_t slot = (static_cast<size_t>(rank) + index % n) % n;
  return slot < static_cast<size_t>(std::min(nranks, kMaxContributors));
}

// Input element `index` of `rank`, as an exact integer (see check.h).
template <typename Codec>
double input_value(ValueScheme scheme, int nranks, int rank, size_t index) {
  constexpr bool is_unsigned = Codec::kUnsigned;
  constexpr uint64_t kBound = Codec::kMoveBound;
  const uint64_t h = mix(scheme, rank, index);
  switch (scheme) {
    case ValueScheme::kMove:
    case ValueScheme::kMinMax: {
      // Signed types take [-bound, bound], unsigned ones [0, 2 * bound].
      const double v = static_cast<double>(h % (2 * kBound + 1));
      return is_unsigned ? v : v - static_cast<double>(kBound);
    }
    case ValueScheme::kSum:
      if (!contributes(nranks, rank, index)) return 0;
      return static_cast<double>(h % 5) - (is_unsigned ? 0 : 2);
    case ValueScheme::kProd: {
      if (!contributes(nranks, rank, index)) return 1;
      if (is_unsigned) return static_cast<double>(1 + h % 2);
      constexpr double kSigned[] = {-1, 1, 2};
      return kSigned[h % 3];
    }
  }
  return 0;
}

// The reduction over all ranks of input element `index`.
template <typename Codec>
double reduced_value(ValueScheme scheme, sclRedOp_t op, int nranks, size_t index) {
  double acc = input_value<Codec>(scheme, nranks, 0, index);
  for (int r = 1; r < nranks; ++r) {
    const double v = input_value<Codec>(scheme, nranks, r, index);
    switch (op) {
      case sclProd:
        acc *= v;
        break;
      case sclMax:
        acc = std::max(acc, v);
        break;
      case sclMin:
        acc = std::min(acc, v);
        break;
      default:  // sum, and the sum under avg
        acc += v;
        break;
    }
  }
  if (op != sclAvg) return acc;
  if constexpr (Codec::kInteger) {
    return static_cast<double>(static_cast<int64_t>(acc) / nranks);  // truncates, as C does
  } else if constexpr (std::is_same_v<typename Codec::Storage, double>) {
    return acc / nranks;
  } else {
    // float divides in float; the narrow types divide in float and round once.
    return Codec::decode(Codec::encode(static_cast<float>(acc) / static_cast<float>(nranks)));
  }
}

// The spacing of the type's values at the magnitude of x.
template <typename Codec>
double ulp(double x) {
  int exponent = 0;
  std::frexp(x, &exponent);  // |x| = f * 2^exponent, f in [0.5, 1)
  const int e = x == 0 ? Codec::kMinExponent : std::max(exponent - 1, Codec::kMinExponent);
  return std::ldexp(1.0, e - Codec::kMantissaBits);
}

}  // namespace

ValueScheme scheme_for(const Collective& collective, sclRedOp_t op) {
  if (!collective.reduces) return ValueScheme::kMove;
  switch (op) {
    case sclProd:
      return ValueScheme::kProd;
    case sclMax:
    case sclMin:
      return ValueScheme::kMinMax;
    default:
      return ValueScheme::kSum;
  }
}

void fill_input(void* dst, size_t elems, sclDataType_t type, ValueScheme scheme, int nranks,
                int rank) {
  visit_type(type, [&]<typename Codec>() {
    auto* out = static_cast<typename Codec::Storage*>(dst);
    for (size_t i = 0; i < elems; ++i) {
      out[i] = Codec::encode(input_value<Codec>(scheme, nranks, rank, i));
    }
  });
}

void fill_sentinel(void* dst, size_t elems, sclDataType_t type) {
  visit_type(type, [&]<typename Codec>() {
    // 0xAB.. is far outside the integer ranges; all-ones is a NaN in every floating type.
    std::memset(dst, Codec::kInteger ? 0xAB : 0xFF, elems * sizeof(typename Codec::Storage));
  });
}

uint64_t count_wrong(const void* out, size_t elems, sclDataType_t type, sclRedOp_t op,
                     ValueScheme scheme, const Collective& collective, const Placement& placement) {
  uint64_t wrong = 0;
  visit_type(type, [&]<typename Codec>() {
    const auto* got = static_cast<const typename Codec::Storage*>(out);
    const bool tolerant = op == sclAvg && collective.reduces && !Codec::kInteger;
    for (size_t j = 0; j < elems; ++j) {
      const Source src = collective.source(placement, j);
      const double expected =
          src.reduced ? reduced_value<Codec>(scheme, op, placement.nranks, src.index)
                      : input_value<Codec>(scheme, placement.nranks, src.rank, src.index);
      const double actual = Codec::decode(got[j]);
      bool ok = actual == expected;  // NaN (the sentinel) never matches
      if constexpr (!Codec::kInteger) {
        if (tolerant && !ok) ok = std::fabs(actual - expected) <= 2 * ulp<Codec>(expected);
      }
      wrong += ok ? 0 : 1;
    }
  });
  return wrong;
}

}  // namespace stratacl::bench
