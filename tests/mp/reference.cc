#include "reference.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "harness.h"
#include "reduce/convert.h"

namespace mp::ref {
namespace {

namespace cv = stratacl::reduce;

uint64_t ElemHash(uint64_t rank_seed, uint64_t index) { return Mix(rank_seed ^ Mix(index)); }
uint64_t RankSeed(uint64_t seed, int rank) {
  return Mix(seed + (uint64_t(rank) + 1) * 0xD6E8FEB86659FD93ull);
}

// Float bits with a random sign and mantissa and an exponent in [lo, lo + span).
uint32_t RandomFloatBits(uint64_t h, int lo, int span) {
  const uint32_t sign = uint32_t(h >> 63) << 31;
  const int e = lo + int((h >> 40) % uint64_t(span));
  return sign | (uint32_t(127 + e) << 23) | uint32_t(h & 0x7FFFFFu);
}
float RandomFloat(uint64_t h, Kind k) {
  const uint32_t bits = k == Kind::kProd ? RandomFloatBits(h, -1, 2) : RandomFloatBits(h, -4, 8);
  return __builtin_bit_cast(float, bits);
}
double RandomDouble(uint64_t h, Kind k) {
  const uint64_t m = Mix(h) & ((uint64_t(1) << 52) - 1);
  const int e = k == Kind::kProd ? -1 + int((h >> 40) % 2) : -4 + int((h >> 40) % 8);
  const uint64_t bits = ((h >> 63) << 63) | (uint64_t(1023 + e) << 52) | m;
  return __builtin_bit_cast(double, bits);
}

// Per-type arithmetic. S: the stored element; A: the type the reduction runs in.
template <typename T>
struct IntType {
  using S = T;
  using A = T;
  using U = std::make_unsigned_t<T>;
  static A ToAcc(S s) { return s; }
  static S FromAcc(A a) { return a; }
  static A Add(A a, A b) { return A(U(U(a) + U(b))); }
  static A Mul(A a, A b) {
    // Promote to at least unsigned int so that uint8/uint16 products cannot overflow int.
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return A(U(W(U(a)) * W(U(b))));
  }
  static A Max(A a, A b) { return b > a ? b : a; }
  static A Min(A a, A b) { return b < a ? b : a; }
  static A Div(A a, int n) {
    if constexpr (std::is_signed_v<T>) {
      return A(int64_t(a) / int64_t(n));
    } else {
      return A(uint64_t(a) / uint64_t(n));
    }
  }
  static S Gen(Kind k, uint64_t h, int rank) {
    S s = S(h);
    if (k == Kind::kProd && rank % 2 == 0) s = S(U(s) | 1u);
    return s;
  }
};

template <typename T>
struct FloatType {
  using S = T;
  using A = T;
  static A ToAcc(S s) { return s; }
  static S FromAcc(A a) { return a; }
  static A Add(A a, A b) { return a + b; }
  static A Mul(A a, A b) { return a * b; }
  static A Max(A a, A b) { return b > a ? b : a; }
  static A Min(A a, A b) { return b < a ? b : a; }
  static A Div(A a, int n) { return a / T(n); }
  static S Gen(Kind k, uint64_t h, int) {
    if (k == Kind::kMove) {
      if constexpr (sizeof(T) == 4) {
        return __builtin_bit_cast(float, uint32_t(h));
      } else {
        return __builtin_bit_cast(double, h);
      }
    }
    if constexpr (sizeof(T) == 4) {
      return RandomFloat(h, k);
    } else {
      return RandomDouble(h, k);
    }
  }
};

// Narrow floating types: reduce in float, round once.
template <typename Storage, float (*kToFloat)(Storage), Storage (*kFromFloat)(float)>
struct NarrowType {
  using S = Storage;
  using A = float;
  static A ToAcc(S s) { return kToFloat(s); }
  static S FromAcc(A a) { return kFromFloat(a); }
  static A Add(A a, A b) { return a + b; }
  static A Mul(A a, A b) { return a * b; }
  static A Max(A a, A b) { return b > a ? b : a; }
  static A Min(A a, A b) { return b < a ? b : a; }
  static A Div(A a, int n) { return a / float(n); }
  static S Gen(Kind k, uint64_t h, int) {
    if (k == Kind::kMove) return S(h);
    return kFromFloat(RandomFloat(h, k));
  }
};

float HalfToFloat(uint16_t v) { return cv::half_to_float(v); }
uint16_t FloatToHalf(float f) { return cv::float_to_half(f); }
float Bf16ToFloat(uint16_t v) { return cv::bf16_to_float(v); }
uint16_t FloatToBf16(float f) { return cv::float_to_bf16(f); }
float E4m3ToFloat(uint8_t v) { return cv::e4m3_to_float(v); }
uint8_t FloatToE4m3(float f) { return cv::float_to_e4m3(f); }
float E5m2ToFloat(uint8_t v) { return cv::e5m2_to_float(v); }
uint8_t FloatToE5m2(float f) { return cv::float_to_e5m2(f); }

using HalfType = NarrowType<uint16_t, HalfToFloat, FloatToHalf>;
using Bf16Type = NarrowType<uint16_t, Bf16ToFloat, FloatToBf16>;
using E4m3Type = NarrowType<uint8_t, E4m3ToFloat, FloatToE4m3>;
using E5m2Type = NarrowType<uint8_t, E5m2ToFloat, FloatToE5m2>;

template <typename Visitor>
void Visit(sclDataType_t t, Visitor&& v) {
  switch (t) {
    case sclInt8:
      return v.template operator()<IntType<int8_t>>();
    case sclUint8:
      return v.template operator()<IntType<uint8_t>>();
    case sclInt32:
      return v.template operator()<IntType<int32_t>>();
    case sclUint32:
      return v.template operator()<IntType<uint32_t>>();
    case sclInt64:
      return v.template operator()<IntType<int64_t>>();
    case sclUint64:
      return v.template operator()<IntType<uint64_t>>();
    case sclFloat16:
      return v.template operator()<HalfType>();
    case sclFloat32:
      return v.template operator()<FloatType<float>>();
    case sclFloat64:
      return v.template operator()<FloatType<double>>();
    case sclBfloat16:
      return v.template operator()<Bf16Type>();
    case sclFloat8e4m3:
      return v.template operator()<E4m3Type>();
    case sclFloat8e5m2:
      return v.template operator()<E5m2Type>();
    default:
      Fatal("reference: bad dtype %d", int(t));
  }
}

template <typename Ty>
typename Ty::A Combine(sclRedOp_t op, typename Ty::A a, typename Ty::A b) {
  switch (op) {
    case sclProd:
      return Ty::Mul(a, b);
    case sclMax:
      return Ty::Max(a, b);
    case sclMin:
      return Ty::Min(a, b);
    default:
      return Ty::Add(a, b);  // sum, and the sum under avg
  }
}

}  // namespace

Kind KindFor(int op) {
  switch (op) {
    case sclSum:
    case sclAvg:
      return Kind::kSum;
    case sclProd:
      return Kind::kProd;
    case sclMax:
    case sclMin:
      return Kind::kMinMax;
    default:
      return Kind::kMove;
  }
}

uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t MakeSeed(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return Mix(Mix(Mix(Mix(a) ^ b) ^ c) ^ d);
}

void FillInput(void* dst, sclDataType_t t, Kind kind, uint64_t seed, int rank, uint64_t first,
               size_t count) {
  Visit(t, [&]<typename Ty>() {
    auto* out = static_cast<typename Ty::S*>(dst);
    const uint64_t rs = RankSeed(seed, rank);
    for (size_t k = 0; k < count; ++k) out[k] = Ty::Gen(kind, ElemHash(rs, first + k), rank);
  });
}

void FillReduced(void* dst, sclDataType_t t, sclRedOp_t op, uint64_t seed, int nranks,
                 uint64_t first, size_t count) {
  const Kind kind = KindFor(op);
  Visit(t, [&]<typename Ty>() {
    auto* out = static_cast<typename Ty::S*>(dst);
    uint64_t rs[1024];
    if (nranks < 1 || nranks > 1024) Fatal("FillReduced: %d ranks", nranks);
    for (int r = 0; r < nranks; ++r) rs[r] = RankSeed(seed, r);
    for (size_t k = 0; k < count; ++k) {
      const uint64_t hi = Mix(first + k);
      typename Ty::A acc = Ty::ToAcc(Ty::Gen(kind, Mix(rs[0] ^ hi), 0));
      for (int r = 1; r < nranks; ++r) {
        acc = Combine<Ty>(op, acc, Ty::ToAcc(Ty::Gen(kind, Mix(rs[r] ^ hi), r)));
      }
      if (op == sclAvg) acc = Ty::Div(acc, nranks);
      out[k] = Ty::FromAcc(acc);
    }
  });
}

void ReduceArrays(void* dst, const void* const* srcs, int nsrc, size_t count, sclDataType_t t,
                  sclRedOp_t op) {
  Visit(t, [&]<typename Ty>() {
    using S = typename Ty::S;
    auto* out = static_cast<S*>(dst);
    for (size_t k = 0; k < count; ++k) {
      typename Ty::A acc = Ty::ToAcc(static_cast<const S*>(srcs[0])[k]);
      for (int r = 1; r < nsrc; ++r) {
        acc = Combine<Ty>(op, acc, Ty::ToAcc(static_cast<const S*>(srcs[r])[k]));
      }
      if (op == sclAvg) acc = Ty::Div(acc, nsrc);
      out[k] = Ty::FromAcc(acc);
    }
  });
}

uint64_t LoadBits(const void* base, sclDataType_t t, size_t i) {
  const size_t es = DtypeSize(t);
  uint64_t v = 0;
  std::memcpy(&v, static_cast<const char*>(base) + i * es, es);  // little endian
  return v;
}

std::string FormatBits(sclDataType_t t, uint64_t bits) {
  char buf[96];
  double value = 0;
  bool is_float = true;
  switch (t) {
    case sclInt8:
      value = double(int8_t(bits));
      is_float = false;
      break;
    case sclUint8:
      value = double(uint8_t(bits));
      is_float = false;
      break;
    case sclInt32:
      value = double(int32_t(bits));
      is_float = false;
      break;
    case sclUint32:
      value = double(uint32_t(bits));
      is_float = false;
      break;
    case sclInt64:
      snprintf(buf, sizeof buf, "0x%" PRIx64 " (%" PRId64 ")", bits, int64_t(bits));
      return buf;
    case sclUint64:
      snprintf(buf, sizeof buf, "0x%" PRIx64 " (%" PRIu64 ")", bits, bits);
      return buf;
    case sclFloat16:
      value = cv::half_to_float(uint16_t(bits));
      break;
    case sclFloat32:
      value = __builtin_bit_cast(float, uint32_t(bits));
      break;
    case sclFloat64:
      value = __builtin_bit_cast(double, bits);
      break;
    case sclBfloat16:
      value = cv::bf16_to_float(uint16_t(bits));
      break;
    case sclFloat8e4m3:
      value = cv::e4m3_to_float(uint8_t(bits));
      break;
    case sclFloat8e5m2:
      value = cv::e5m2_to_float(uint8_t(bits));
      break;
    default:
      break;
  }
  if (is_float) {
    snprintf(buf, sizeof buf, "0x%" PRIx64 " (%.17g)", bits, value);
  } else {
    snprintf(buf, sizeof buf, "0x%" PRIx64 " (%.0f)", bits, value);
  }
  return buf;
}

unsigned char SentinelByte(uint64_t seed) {
  // One of 0xF1, 0xF3, ..., 0xFF: an element of all such bytes is a NaN or a negative number of
  // a magnitude (>= 144) that no floating reducing input or output here can reach.
  return static_cast<unsigned char>(0xF1 | (Mix(seed ^ 0x5E47) & 0x0E));
}

}  // namespace mp::ref
