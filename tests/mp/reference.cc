#include "reference.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "core/hash.h"
#include "harness.h"
#include "reduce/convert.h"

namespace mp::ref {
namespace {

namespace cv = stratacl::reduce;
using stratacl::splitmix64;

uint64_t elem_hash(uint64_t rank_seed, uint64_t index) {
  return splitmix64(rank_seed ^ splitmix64(index));
}
uint64_t rank_seed(uint64_t seed, int rank) {
  return splitmix64(seed + (uint64_t(rank) + 1) * 0xD6E8FEB86659FD93ull);
}

// Float bits with a random sign and mantissa and an exponent in [lo, lo + span).
uint32_t random_float_bits(uint64_t h, int lo, int span) {
  const uint32_t sign = uint32_t(h >> 63) << 31;
  const int e = lo + int((h >> 40) % uint64_t(span));
  return sign | (uint32_t(127 + e) << 23) | uint32_t(h & 0x7FFFFFu);
}
float random_float(uint64_t h, Kind k) {
  const uint32_t bits =
      k == Kind::kProd ? random_float_bits(h, -1, 2) : random_float_bits(h, -4, 8);
  return __builtin_bit_cast(float, bits);
}
double random_double(uint64_t h, Kind k) {
  const uint64_t m = splitmix64(h) & ((uint64_t(1) << 52) - 1);
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
  static A to_acc(S s) { return s; }
  static S from_acc(A a) { return a; }
  static A add(A a, A b) { return A(U(U(a) + U(b))); }
  static A mul(A a, A b) {
    // Promote to at least unsigned int so that uint8/uint16 products cannot overflow int.
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return A(U(W(U(a)) * W(U(b))));
  }
  static A max(A a, A b) { return b > a ? b : a; }
  static A min(A a, A b) { return b < a ? b : a; }
  static A div(A a, int n) {
    if constexpr (std::is_signed_v<T>) {
      return A(int64_t(a) / int64_t(n));
    } else {
      return A(uint64_t(a) / uint64_t(n));
    }
  }
  static S gen(Kind k, uint64_t h, int rank) {
    S s = S(h);
    if (k == Kind::kProd && rank % 2 == 0) s = S(U(s) | 1u);
    return s;
  }
};

template <typename T>
struct FloatType {
  using S = T;
  using A = T;
  static A to_acc(S s) { return s; }
  static S from_acc(A a) { return a; }
  static A add(A a, A b) { return a + b; }
  static A mul(A a, A b) { return a * b; }
  static A max(A a, A b) { return b > a ? b : a; }
  static A min(A a, A b) { return b < a ? b : a; }
  static A div(A a, int n) { return a / T(n); }
  static S gen(Kind k, uint64_t h, int) {
    if (k == Kind::kMove) {
      if constexpr (sizeof(T) == 4) {
        return __builtin_bit_cast(float, uint32_t(h));
      } else {
        return __builtin_bit_cast(double, h);
      }
    }
    if constexpr (sizeof(T) == 4) {
      return random_float(h, k);
    } else {
      return random_double(h, k);
    }
  }
};

// Narrow floating types: reduce in float, round once.
template <typename Storage, float (*kToFloat)(Storage), Storage (*kFromFloat)(float)>
struct NarrowType {
  using S = Storage;
  using A = float;
  static A to_acc(S s) { return kToFloat(s); }
  static S from_acc(A a) { return kFromFloat(a); }
  static A add(A a, A b) { return a + b; }
  static A mul(A a, A b) { return a * b; }
  static A max(A a, A b) { return b > a ? b : a; }
  static A min(A a, A b) { return b < a ? b : a; }
  static A div(A a, int n) { return a / float(n); }
  static S gen(Kind k, uint64_t h, int) {
    if (k == Kind::kMove) return S(h);
    return kFromFloat(random_float(h, k));
  }
};

float half_to_float(uint16_t v) { return cv::half_to_float(v); }
uint16_t float_to_half(float f) { return cv::float_to_half(f); }
float bf16_to_float(uint16_t v) { return cv::bf16_to_float(v); }
uint16_t float_to_bf16(float f) { return cv::float_to_bf16(f); }
float e4m3_to_float(uint8_t v) { return cv::e4m3_to_float(v); }
uint8_t float_to_e4m3(float f) { return cv::float_to_e4m3(f); }
float e5m2_to_float(uint8_t v) { return cv::e5m2_to_float(v); }
uint8_t float_to_e5m2(float f) { return cv::float_to_e5m2(f); }

using HalfType = NarrowType<uint16_t, half_to_float, float_to_half>;
using Bf16Type = NarrowType<uint16_t, bf16_to_float, float_to_bf16>;
using E4m3Type = NarrowType<uint8_t, e4m3_to_float, float_to_e4m3>;
using E5m2Type = NarrowType<uint8_t, e5m2_to_float, float_to_e5m2>;

template <typename Visitor>
void visit(sclDataType_t t, Visitor&& v) {
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
      fatal("reference: bad dtype %d", int(t));
  }
}

template <typename Ty>
typename Ty::A combine(sclRedOp_t op, typename Ty::A a, typename Ty::A b) {
  switch (op) {
    case sclProd:
      return Ty::mul(a, b);
    case sclMax:
      return Ty::max(a, b);
    case sclMin:
      return Ty::min(a, b);
    default:
      return Ty::add(a, b);  // sum, and the sum under avg
  }
}

}  // namespace

Kind kind_for(int op) {
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

uint64_t make_seed(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return splitmix64(splitmix64(splitmix64(splitmix64(a) ^ b) ^ c) ^ d);
}

void fill_input(void* dst, sclDataType_t t, Kind kind, uint64_t seed, int rank, uint64_t first,
                size_t count) {
  visit(t, [&]<typename Ty>() {
    auto* out = static_cast<typename Ty::S*>(dst);
    const uint64_t rs = rank_seed(seed, rank);
    for (size_t k = 0; k < count; ++k) out[k] = Ty::gen(kind, elem_hash(rs, first + k), rank);
  });
}

void fill_reduced(void* dst, sclDataType_t t, sclRedOp_t op, uint64_t seed, int nranks,
                  uint64_t first, size_t count) {
  const Kind kind = kind_for(op);
  visit(t, [&]<typename Ty>() {
    auto* out = static_cast<typename Ty::S*>(dst);
    uint64_t rs[1024];
    if (nranks < 1 || nranks > 1024) fatal("fill_reduced: %d ranks", nranks);
    for (int r = 0; r < nranks; ++r) rs[r] = rank_seed(seed, r);
    for (size_t k = 0; k < count; ++k) {
      const uint64_t hi = splitmix64(first + k);
      typename Ty::A acc = Ty::to_acc(Ty::gen(kind, splitmix64(rs[0] ^ hi), 0));
      for (int r = 1; r < nranks; ++r) {
        acc = combine<Ty>(op, acc, Ty::to_acc(Ty::gen(kind, splitmix64(rs[r] ^ hi), r)));
      }
      if (op == sclAvg) acc = Ty::div(acc, nranks);
      out[k] = Ty::from_acc(acc);
    }
  });
}

void reduce_arrays(void* dst, const void* const* srcs, int nsrc, size_t count, sclDataType_t t,
                   sclRedOp_t op) {
  visit(t, [&]<typename Ty>() {
    using S = typename Ty::S;
    auto* out = static_cast<S*>(dst);
    for (size_t k = 0; k < count; ++k) {
      typename Ty::A acc = Ty::to_acc(static_cast<const S*>(srcs[0])[k]);
      for (int r = 1; r < nsrc; ++r) {
        acc = combine<Ty>(op, acc, Ty::to_acc(static_cast<const S*>(srcs[r])[k]));
      }
      if (op == sclAvg) acc = Ty::div(acc, nsrc);
      out[k] = Ty::from_acc(acc);
    }
  });
}

uint64_t load_bits(const void* base, sclDataType_t t, size_t i) {
  const size_t es = dtype_size(t);
  uint64_t v = 0;
  std::memcpy(&v, static_cast<const char*>(base) + i * es, es);  // little endian
  return v;
}

std::string format_bits(sclDataType_t t, uint64_t bits) {
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

unsigned char sentinel_byte(uint64_t seed) {
  // One of 0xF1, 0xF3, ..., 0xFF: an element of all such bytes is a NaN or a negative number of
  // a magnitude (>= 144) that no floating reducing input or output here can reach.
  return static_cast<unsigned char>(0xF1 | (splitmix64(seed ^ 0x5E47) & 0x0E));
}

}  // namespace mp::ref
