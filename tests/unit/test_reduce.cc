// Reduction kernels (src/reduce): the float <-> narrow conversions against a slow reference
// built from first principles, and every ISA's reduce_n against a plain reference loop written
// here (not the library's scalar path), over all types, ops, source counts, lengths, alignments
// and in-place use.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "reduce/convert.h"
#include "reduce/reduce.h"

namespace stratacl::reduce {
namespace {

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
float float_of(uint32_t u) { return std::bit_cast<float>(u); }

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (isa_supported(isa)) out.push_back(isa);
  }
  return out;
}

// ===================== Narrow formats, described independently of convert.h =====================

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

const NarrowFormat kFp16{dtype_name(sclFloat16),
                         16,
                         5,
                         10,
                         15,
                         true,
                         false,
                         0x7E00,
                         [](uint32_t c) { return half_to_float(uint16_t(c)); },
                         [](float f) -> uint32_t { return float_to_half(f); }};
const NarrowFormat kBf16{dtype_name(sclBfloat16),
                         16,
                         8,
                         7,
                         127,
                         true,
                         false,
                         0x7FC0,
                         [](uint32_t c) { return bf16_to_float(uint16_t(c)); },
                         [](float f) -> uint32_t { return float_to_bf16(f); }};
const NarrowFormat kE4m3{dtype_name(sclFloat8e4m3),
                         8,
                         4,
                         3,
                         7,
                         false,
                         true,
                         0x7F,
                         [](uint32_t c) { return e4m3_to_float(uint8_t(c)); },
                         [](float f) -> uint32_t { return float_to_e4m3(f); }};
const NarrowFormat kE5m2{dtype_name(sclFloat8e5m2),
                         8,
                         5,
                         2,
                         15,
                         true,
                         true,
                         0x7E,
                         [](uint32_t c) { return e5m2_to_float(uint8_t(c)); },
                         [](float f) -> uint32_t { return float_to_e5m2(f); }};
const NarrowFormat* const kFormats[] = {&kFp16, &kBf16, &kE4m3, &kE5m2};

// Slow reference rounding: search the sorted list of all finite non-negative values.
class SlowRounder {
 public:
  explicit SlowRounder(const NarrowFormat& f) : f_(f) {
    // Non-negative codes are ordered by value up to the largest finite one.
    for (uint32_t c = 0; c < f.sign_bit(); ++c) {
      if (f.is_nan(c) || std::isinf(f.value(c))) break;
      values_.push_back(f.value(c));
    }
  }

  uint32_t round(float x) const {
    if (std::isnan(x)) return f_.canonical_nan;
    const uint32_t sign = std::signbit(x) ? f_.sign_bit() : 0;
    const double a = std::fabs(double(x));
    const uint32_t max_code = uint32_t(values_.size() - 1);
    const double max_value = values_.back();
    if (std::isinf(a)) return sign | (f_.has_inf ? f_.inf_code() : max_code);
    if (a > max_value) {
      if (f_.saturate) return sign | max_code;
      // Unbounded RNE would go to max + ulp (an even code, like inf) from the midpoint on.
      const double ulp = max_value - values_[values_.size() - 2];
      return sign | (a >= max_value + ulp / 2 ? f_.inf_code() : max_code);
    }
    const size_t lo =
        size_t(std::upper_bound(values_.begin(), values_.end(), a) - values_.begin()) - 1;
    if (values_[lo] == a) return sign | uint32_t(lo);
    const double mid = (values_[lo] + values_[lo + 1]) / 2;  // exact: few significant bits
    size_t pick = a < mid ? lo : lo + 1;
    if (a == mid) pick = (lo % 2 == 0) ? lo : lo + 1;  // tie: the even code
    return sign | uint32_t(pick);
  }

  const std::vector<double>& values() const { return values_; }

 private:
  const NarrowFormat& f_;
  std::vector<double> values_;
};

TEST(ReduceConvert, WidenIsExactForEveryCode) {
  for (const NarrowFormat* f : kFormats) {
    SCOPED_TRACE(f->name);
    for (uint32_t c = 0; c < (1u << f->bits); ++c) {
      const float got = f->widen(c);
      if (f->is_nan(c)) {
        EXPECT_TRUE(std::isnan(got)) << std::hex << c;
        continue;
      }
      const float want = float(f->value(c));  // exact: every narrow value is a float
      ASSERT_EQ(bits_of(got), bits_of(want)) << std::hex << "code 0x" << c;
    }
  }
}

TEST(ReduceConvert, RoundTripsEveryCode) {
  for (const NarrowFormat* f : kFormats) {
    SCOPED_TRACE(f->name);
    for (uint32_t c = 0; c < (1u << f->bits); ++c) {
      const uint32_t back = f->narrow(f->widen(c));
      if (f->is_nan(c)) {
        EXPECT_EQ(back, f->canonical_nan) << std::hex << c;
        EXPECT_TRUE(std::isnan(f->widen(back)));
      } else {
        ASSERT_EQ(back, c) << std::hex << "code 0x" << c;
      }
    }
  }
}

TEST(ReduceConvert, HalfwayCasesRoundToEven) {
  for (const NarrowFormat* f : kFormats) {
    SCOPED_TRACE(f->name);
    const SlowRounder ref(*f);
    const std::vector<double>& v = ref.values();
    std::vector<double> probes;
    for (size_t i = 0; i + 1 < v.size(); ++i) probes.push_back((v[i] + v[i + 1]) / 2);
    const double top_ulp = v.back() - v[v.size() - 2];
    probes.push_back(v.back() + top_ulp / 2);  // the overflow threshold
    probes.push_back(v.back() + top_ulp);
    int checked = 0;
    for (double p : probes) {
      const float mid = float(p);
      if (double(mid) != p) continue;  // not a float (cannot happen for these formats)
      for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
        for (float s : {x, -x}) {
          ASSERT_EQ(f->narrow(s), ref.round(s)) << "x=" << s;
          ++checked;
        }
      }
    }
    EXPECT_GT(checked, 6 * int(v.size()) - 12);
  }
}

TEST(ReduceConvert, RandomFloatsMatchSlowReference) {
  std::mt19937_64 rng(12345);
  for (const NarrowFormat* f : kFormats) {
    SCOPED_TRACE(f->name);
    const SlowRounder ref(*f);
    const int min_exp = 1 - f->bias - f->man_bits - 3;
    const int max_exp = int(f->exp_max()) - f->bias + 2;
    for (int i = 0; i < 60000; ++i) {
      float x;
      if (i % 2 == 0) {
        x = float_of(uint32_t(rng()));  // anywhere, NaN and inf included
      } else {                          // around the format's range, where rounding matters
        const int e = min_exp + int(rng() % uint64_t(max_exp - min_exp + 1));
        x = std::ldexp(1.0f + float(rng() % (1u << 23)) / float(1u << 23), e);
        if (rng() & 1) x = -x;
      }
      ASSERT_EQ(f->narrow(x), ref.round(x)) << "x=" << x << " bits=0x" << std::hex << bits_of(x);
    }
  }
}

TEST(ReduceConvert, SpotValues) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_e4m3(1.0f), 0x38);
  EXPECT_EQ(float_to_e5m2(1.0f), 0x3C);
  // Smallest subnormals, and half of them (a tie, to the even code 0).
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(float_to_half(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(float_to_bf16(std::ldexp(1.0f, -133)), 0x0001);
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -9)), 0x01);
  EXPECT_EQ(float_to_e4m3(-std::ldexp(1.0f, -10)), 0x80);
  EXPECT_EQ(float_to_e5m2(std::ldexp(1.0f, -16)), 0x01);
  // Overflow.
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65519.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);
  EXPECT_EQ(float_to_half(-INFINITY), 0xFC00);
  EXPECT_EQ(float_to_bf16(3.4e38f), 0x7F80);  // rounds past the largest bf16
  EXPECT_EQ(float_to_e4m3(448.0f), 0x7E);
  EXPECT_EQ(float_to_e4m3(1e30f), 0x7E);
  EXPECT_EQ(float_to_e4m3(INFINITY), 0x7E);
  EXPECT_EQ(float_to_e4m3(-INFINITY), 0xFE);
  EXPECT_EQ(float_to_e5m2(61440.0f), 0x7B);
  EXPECT_EQ(float_to_e5m2(1e30f), 0x7B);
  EXPECT_EQ(float_to_e5m2(-INFINITY), 0xFC);
  // NaN, with any sign and payload, becomes the canonical NaN.
  const float nan = float_of(0xFFC01234u);
  EXPECT_EQ(float_to_half(nan), 0x7E00);
  EXPECT_EQ(float_to_bf16(nan), 0x7FC0);
  EXPECT_EQ(float_to_e4m3(nan), 0x7F);
  EXPECT_EQ(float_to_e5m2(nan), 0x7E);
  EXPECT_TRUE(std::isnan(e4m3_to_float(0xFF)));
}

// ============================== Reduction: reference and harness ==============================

const sclRedOp_t kAllOps[] = {sclSum, sclProd, sclMax, sclMin, sclAvg};

const NarrowFormat* narrow_format(sclDataType_t dt) {
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

template <class F>
F float_op(sclRedOp_t op, F a, F b) {
  switch (op) {
    case sclProd:
      return a * b;
    case sclMax:
    case sclMin: {
      // NaN skipped, -0 < +0 (reduce.h).
      if (std::isnan(b)) return a;
      if (std::isnan(a)) return b;
      if (a == b) return (std::signbit(a) == (op == sclMax)) ? b : a;
      return (op == sclMax) == (b > a) ? b : a;
    }
    default:
      return a + b;
  }
}

using Srcs = std::vector<const unsigned char*>;

template <class T>
void ref_integer(unsigned char* out, const Srcs& in, size_t count, sclRedOp_t op, int div) {
  using U = std::make_unsigned_t<T>;
  for (size_t i = 0; i < count; ++i) {
    T acc = load_at<T>(in[0], i);
    for (size_t k = 1; k < in.size(); ++k) {
      const T b = load_at<T>(in[k], i);
      if (op == sclSum || op == sclAvg) acc = T(U(U(acc) + U(b)));
      if (op == sclProd) acc = T(U(U(acc) * U(b)));
      if (op == sclMax && b > acc) acc = b;
      if (op == sclMin && b < acc) acc = b;
    }
    if (op == sclAvg) {
      acc = std::is_signed_v<T> ? T(int64_t(acc) / int64_t(div)) : T(uint64_t(acc) / uint64_t(div));
    }
    store_at<T>(out, i, acc);
  }
}

template <class F>
void ref_float(unsigned char* out, const Srcs& in, size_t count, sclRedOp_t op, int div) {
  for (size_t i = 0; i < count; ++i) {
    F acc = load_at<F>(in[0], i);
    for (size_t k = 1; k < in.size(); ++k) acc = float_op(op, acc, load_at<F>(in[k], i));
    if (op == sclAvg) acc = acc / F(div);
    if (std::isnan(acc)) acc = std::numeric_limits<F>::quiet_NaN();  // 0x7FC00000 / 0x7FF8...
    store_at<F>(out, i, acc);
  }
}

template <class Bits>
void ref_narrow(const NarrowFormat& f, unsigned char* out, const Srcs& in, size_t count,
                sclRedOp_t op, int div) {
  for (size_t i = 0; i < count; ++i) {
    float acc = f.widen(load_at<Bits>(in[0], i));
    for (size_t k = 1; k < in.size(); ++k)
      acc = float_op(op, acc, f.widen(load_at<Bits>(in[k], i)));
    if (op == sclAvg) acc = acc / float(div);
    store_at<Bits>(out, i, Bits(f.narrow(acc)));
  }
}

void reference(sclDataType_t dt, unsigned char* out, const Srcs& in, size_t count, sclRedOp_t op,
               int div) {
  switch (dt) {
    case sclInt8:
      return ref_integer<int8_t>(out, in, count, op, div);
    case sclUint8:
      return ref_integer<uint8_t>(out, in, count, op, div);
    case sclInt32:
      return ref_integer<int32_t>(out, in, count, op, div);
    case sclUint32:
      return ref_integer<uint32_t>(out, in, count, op, div);
    case sclInt64:
      return ref_integer<int64_t>(out, in, count, op, div);
    case sclUint64:
      return ref_integer<uint64_t>(out, in, count, op, div);
    case sclFloat32:
      return ref_float<float>(out, in, count, op, div);
    case sclFloat64:
      return ref_float<double>(out, in, count, op, div);
    case sclFloat16:
    case sclBfloat16:
      return ref_narrow<uint16_t>(*narrow_format(dt), out, in, count, op, div);
    default:
      return ref_narrow<uint8_t>(*narrow_format(dt), out, in, count, op, div);
  }
}

// Random inputs. Without allow_nan nothing is NaN, but float types get +-0, +-inf, subnormals and
// ordinary values, and fp8 gets values large enough for sums to saturate.
void fill_random(sclDataType_t dt, unsigned char* p, size_t count, std::mt19937_64& rng,
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

std::string hex_bytes(const unsigned char* p, size_t n) {
  std::string s;
  char buf[4];
  for (size_t i = n; i-- > 0;) {  // little endian: print most significant first
    std::snprintf(buf, sizeof(buf), "%02x", p[i]);
    s += buf;
  }
  return s;
}

struct Layout {
  bool misaligned;  // shift dst and each src by 1..3 bytes off a 64-byte boundary
  int inplace;      // -1: separate dst; else dst == srcs[inplace]
};

// Buffers with guard bytes on both sides, at a chosen offset from a 64-byte boundary.
class GuardedBuffer {
 public:
  static constexpr size_t kGuard = 64;
  GuardedBuffer(size_t bytes, size_t shift) : bytes_(bytes), store_(bytes + 4 * kGuard) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(store_.data());
    start_ = size_t((kGuard - base % kGuard) % kGuard) + kGuard + shift;
  }
  unsigned char* data() { return store_.data() + start_; }
  void fill_guards(unsigned char v) {
    std::memset(store_.data(), v, start_);
    std::memset(data() + bytes_, v, store_.size() - start_ - bytes_);
  }
  bool guards_intact(unsigned char v) const {
    for (size_t i = 0; i < store_.size(); ++i) {
      if ((i < start_ || i >= start_ + bytes_) && store_[i] != v) return false;
    }
    return true;
  }

 private:
  size_t bytes_, start_;
  std::vector<unsigned char> store_;
};

// Runs one case on every supported ISA against the reference; returns false after a failure.
bool check_case(sclDataType_t dt, sclRedOp_t op, int nsrc, size_t count, Layout layout,
                std::mt19937_64& rng) {
  const size_t es = dtype_size(dt), bytes = count * es;
  const int div = op == sclAvg ? 1 + int(rng() % 9) : 0;
  std::vector<GuardedBuffer> bufs;
  std::vector<std::vector<unsigned char>> original(nsrc);
  for (int k = 0; k < nsrc; ++k) {
    bufs.emplace_back(bytes, layout.misaligned ? 1 + k % 3 : 0);
    original[k].resize(bytes);
    fill_random(dt, original[k].data(), count, rng, /*allow_nan=*/false);
  }
  GuardedBuffer out(bytes, layout.misaligned ? 3 : 0);
  Srcs orig_ptrs;
  for (auto& o : original) orig_ptrs.push_back(o.data());
  std::vector<unsigned char> want(bytes);
  reference(dt, want.data(), orig_ptrs, count, op, div);

  for (Isa isa : supported_isas()) {
    std::vector<const void*> srcs;
    for (int k = 0; k < nsrc; ++k) {
      if (bytes) std::memcpy(bufs[k].data(), original[k].data(), bytes);
      bufs[k].fill_guards(0xA5);
      srcs.push_back(bufs[k].data());
    }
    unsigned char* dst = layout.inplace >= 0 ? bufs[layout.inplace].data() : out.data();
    if (layout.inplace < 0) {
      std::memset(out.data(), 0x5A, bytes);
      out.fill_guards(0xA5);
    }
    reduce_n_isa(isa, dst, srcs.data(), nsrc, count, dt, op, div);

    auto what = [&] {
      char buf[160];
      std::snprintf(buf, sizeof(buf), "%s %s %s nsrc=%d count=%zu %s inplace=%d div=%d",
                    isa_name(isa), dtype_name(dt), op_name(op), nsrc, count,
                    layout.misaligned ? "misaligned" : "aligned", layout.inplace, div);
      return std::string(buf);
    };
    if (bytes && std::memcmp(dst, want.data(), bytes) != 0) {
      size_t i = 0;
      while (std::memcmp(dst + i * es, want.data() + i * es, es) == 0) ++i;
      std::string inputs;
      for (int k = 0; k < nsrc; ++k) {
        inputs += ' ';  // not `" " + str`: g++ 12 -O3 gives a false -Wrestrict on it
        inputs += hex_bytes(original[k].data() + i * es, es);
      }
      ADD_FAILURE() << what() << ": element " << i << " got 0x" << hex_bytes(dst + i * es, es)
                    << " want 0x" << hex_bytes(want.data() + i * es, es) << " inputs" << inputs;
      return false;
    }
    for (int k = 0; k < nsrc; ++k) {
      if (k != layout.inplace && bytes && std::memcmp(bufs[k].data(), original[k].data(), bytes)) {
        ADD_FAILURE() << what() << ": source " << k << " was modified";
        return false;
      }
      if (!bufs[k].guards_intact(0xA5)) {
        ADD_FAILURE() << what() << ": wrote outside source buffer " << k;
        return false;
      }
    }
    if (layout.inplace < 0 && !out.guards_intact(0xA5)) {
      ADD_FAILURE() << what() << ": wrote outside dst";
      return false;
    }
  }
  return true;
}

class ReduceMatrix : public ::testing::TestWithParam<sclDataType_t> {};

TEST_P(ReduceMatrix, EveryIsaMatchesReference) {
  const sclDataType_t dt = GetParam();
  std::mt19937_64 rng(1000 + unsigned(dt));
  // Around the remainder tiles (one padded tile of 64, 128, 256 or 512 bytes after 512-byte
  // tiles; 32 elements of the narrow types) and the full tiles (4 KiB).
  const size_t counts[] = {0, 1, 7, 17, 31, 33, 63, 64, 65, 127, 129, 1057, 1200, 2081, 4097};
  int variant = 0;
  for (sclRedOp_t op : kAllOps) {
    for (int nsrc : {1, 2, 3, 5, 8}) {
      for (size_t count : counts) {
        // Separate dst, element-aligned and misaligned; in place, aligned and misaligned, on a
        // rotating source (so first, middle and last sources all get their turn).
        const int k = variant++;
        const Layout layouts[] = {
            {false, -1}, {true, -1}, {false, k % nsrc}, {true, (k + 1) % nsrc}};
        for (Layout layout : layouts) {
          if (!check_case(dt, op, nsrc, count, layout, rng)) return;
        }
      }
    }
  }
  // A few long runs: many tiles, a ragged last one.
  const sclRedOp_t long_ops[] = {sclSum, kAllOps[1 + unsigned(dt) % 4]};
  for (sclRedOp_t op : long_ops) {
    if (!check_case(dt, op, 3, 100003, {true, 1}, rng)) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Reduce, ReduceMatrix, ::testing::ValuesIn(kAllDtypes),
                         [](const ::testing::TestParamInfo<sclDataType_t>& info) {
                           return std::string(dtype_name(info.param));
                         });

// Every ISA gives the same bits as every other on arbitrary data, NaN payloads included.
TEST(ReduceIsa, AllIsasBitIdenticalOnRandomData) {
  const std::vector<Isa> isas = supported_isas();
  std::mt19937_64 rng(77);
  const size_t count = 5000;
  const int nsrc = 4;
  for (sclDataType_t dt : kAllDtypes) {
    for (sclRedOp_t op : kAllOps) {
      const size_t bytes = count * dtype_size(dt);
      std::vector<std::vector<unsigned char>> in(nsrc, std::vector<unsigned char>(bytes + 3));
      std::vector<const void*> srcs;
      for (int k = 0; k < nsrc; ++k) {
        fill_random(dt, in[k].data() + k % 3, count, rng, /*allow_nan=*/true);
        srcs.push_back(in[k].data() + k % 3);
      }
      std::vector<unsigned char> first(bytes + 1), got(bytes + 1);
      reduce_n_isa(Isa::kScalar, first.data() + 1, srcs.data(), nsrc, count, dt, op, 3);
      for (Isa isa : isas) {
        reduce_n_isa(isa, got.data() + 1, srcs.data(), nsrc, count, dt, op, 3);
        ASSERT_EQ(0, std::memcmp(first.data() + 1, got.data() + 1, bytes))
            << isa_name(isa) << " " << dtype_name(dt) << " " << op_name(op);
      }
    }
  }
}

// Every pair of fp8 codes, through every op, on every ISA: the tile converters (convert_simd.h,
// written once for every vector width) must give the scalar kernel's bits for every result the
// reductions can produce, NaNs, infinities, saturation and subnormals included.
TEST(ReduceIsa, EveryPairOfFp8CodesOnEveryIsa) {
  std::vector<uint8_t> a(65536), b(65536);
  for (size_t i = 0; i < a.size(); ++i) a[i] = uint8_t(i), b[i] = uint8_t(i >> 8);
  const void* srcs[2] = {a.data(), b.data()};
  for (sclDataType_t dt : {sclFloat8e4m3, sclFloat8e5m2}) {
    for (sclRedOp_t op : kAllOps) {
      std::vector<uint8_t> want(a.size()), got(a.size());
      reduce_n_isa(Isa::kScalar, want.data(), srcs, 2, a.size(), dt, op, 2);
      for (Isa isa : supported_isas()) {
        reduce_n_isa(isa, got.data(), srcs, 2, a.size(), dt, op, 2);
        ASSERT_EQ(want, got) << isa_name(isa) << " " << dtype_name(dt) << " " << op_name(op);
      }
    }
  }
}

// ================================= Documented edge semantics =================================

template <class T>
std::vector<T> run(Isa isa, sclDataType_t dt, sclRedOp_t op, const std::vector<std::vector<T>>& in,
                   int div = 1) {
  std::vector<const void*> srcs;
  for (const auto& v : in) srcs.push_back(v.data());
  std::vector<T> out(in[0].size());
  reduce_n_isa(isa, out.data(), srcs.data(), int(in.size()), out.size(), dt, op, div);
  return out;
}

TEST(ReduceSemantics, EdgeCasesOnEveryIsa) {
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(isa_name(isa));
    // Integers wrap; avg truncates toward zero, with a divisor wider than the type.
    EXPECT_EQ(run<int8_t>(isa, sclInt8, sclSum, {{127, -128}, {1, -1}}),
              (std::vector<int8_t>{-128, 127}));
    EXPECT_EQ(run<int8_t>(isa, sclInt8, sclAvg, {{-3, 100}, {-4, 27}}, 2),
              (std::vector<int8_t>{-3, 127 / 2}));
    EXPECT_EQ(run<uint8_t>(isa, sclUint8, sclAvg, {{100}, {150}}, 200), (std::vector<uint8_t>{1}));
    EXPECT_EQ(run<int32_t>(isa, sclInt32, sclProd, {{65536}, {65536}}), (std::vector<int32_t>{0}));
    // Float max/min take -0 < +0 whatever the order, and skip NaNs wherever they are: they
    // associate and commute, as the hierarchy's grouping of the ranks needs.
    const auto mx =
        run<float>(isa, sclFloat32, sclMax, {{0.0f, -0.0f, -0.0f}, {-0.0f, 0.0f, -0.0f}});
    EXPECT_FALSE(std::signbit(mx[0]));
    EXPECT_FALSE(std::signbit(mx[1]));
    EXPECT_TRUE(std::signbit(mx[2]));
    const auto mn = run<double>(isa, sclFloat64, sclMin, {{0.0, -0.0, 0.0}, {-0.0, 0.0, 0.0}});
    EXPECT_TRUE(std::signbit(mn[0]));
    EXPECT_TRUE(std::signbit(mn[1]));
    EXPECT_FALSE(std::signbit(mn[2]));
    const float qnan = std::numeric_limits<float>::quiet_NaN();
    const auto nmx = run<float>(isa, sclFloat32, sclMax,
                                {{qnan, 1.0f, qnan}, {1.0f, qnan, qnan}, {-2.0f, -2.0f, qnan}});
    EXPECT_EQ(nmx[0], 1.0f);
    EXPECT_EQ(nmx[1], 1.0f);
    EXPECT_EQ(bits_of(nmx[2]), 0x7FC00000u);
    const auto nmn =
        run<float>(isa, sclFloat32, sclMin, {{qnan, 1.0f}, {1.0f, qnan}, {-2.0f, -2.0f}});
    EXPECT_EQ(nmn[0], -2.0f);
    EXPECT_EQ(nmn[1], -2.0f);
    // Every grouping of the same inputs gives the same bits: the ranks' max in any order.
    const std::vector<std::vector<float>> four = {{1.0f}, {5.0f}, {qnan}, {9.0f}};
    const float whole = run<float>(isa, sclFloat32, sclMax, four)[0];
    const float halves = run<float>(isa, sclFloat32, sclMax,
                                    {run<float>(isa, sclFloat32, sclMax, {four[0], four[1]}),
                                     run<float>(isa, sclFloat32, sclMax, {four[2], four[3]})})[0];
    EXPECT_EQ(whole, 9.0f);
    EXPECT_EQ(halves, 9.0f);
    // inf - inf is the canonical NaN.
    const auto nan = run<float>(isa, sclFloat32, sclSum, {{INFINITY}, {-INFINITY}});
    EXPECT_EQ(bits_of(nan[0]), 0x7FC00000u);
    // Narrow types round once, after the float32 sum; fp8 saturates, fp16 overflows to inf.
    EXPECT_EQ(run<uint8_t>(isa, sclFloat8e4m3, sclSum, {{0x7E}, {0x7E}}),
              (std::vector<uint8_t>{0x7E}));
    EXPECT_EQ(run<uint8_t>(isa, sclFloat8e5m2, sclSum, {{0x7B}, {0x7B}}),
              (std::vector<uint8_t>{0x7B}));
    EXPECT_EQ(run<uint8_t>(isa, sclFloat8e5m2, sclSum, {{0x7C}, {0x3C}}),
              (std::vector<uint8_t>{0x7C}));
    EXPECT_EQ(run<uint16_t>(isa, sclFloat16, sclSum, {{0x7BFF}, {0x7BFF}}),
              (std::vector<uint16_t>{0x7C00}));
    // 1 + 2^-11 + 2^-11 in fp16: rounding after each add would give 1, once gives 1 + 2^-10.
    EXPECT_EQ(run<uint16_t>(isa, sclFloat16, sclSum, {{0x3C00}, {0x1000}, {0x1000}}),
              (std::vector<uint16_t>{0x3C01}));
  }
}

// weighted_sum_n (MoE combine) on every ISA against a plain loop: each product rounded to float
// before it is added (the volatile stops the compiler fusing them here), in source order, one
// rounding to the type; random weights (negative and zero included), NaN inputs, every tail
// length around the tiles, unaligned pointers, one to five sources.
float product(float a, float b) {
  volatile float p = a * b;
  return p;
}

void ref_weighted(sclDataType_t dt, unsigned char* out, const Srcs& in, const float* w,
                  size_t count) {
  const NarrowFormat* f = narrow_format(dt);
  for (size_t i = 0; i < count; ++i) {
    float acc = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      const float x = f ? (f->bits == 8 ? f->widen(load_at<uint8_t>(in[k], i))
                                        : f->widen(load_at<uint16_t>(in[k], i)))
                        : load_at<float>(in[k], i);
      acc = k == 0 ? product(x, w[k]) : acc + product(x, w[k]);
    }
    if (!f) {
      if (std::isnan(acc)) acc = std::numeric_limits<float>::quiet_NaN();
      store_at<float>(out, i, acc);
    } else if (f->bits == 8) {
      store_at<uint8_t>(out, i, uint8_t(f->narrow(acc)));
    } else {
      store_at<uint16_t>(out, i, uint16_t(f->narrow(acc)));
    }
  }
}

TEST(ReduceWeighted, EveryIsaMatchesPlainLoop) {
  std::mt19937_64 rng(2026);
  std::uniform_real_distribution<float> weight(-2.0f, 2.0f);
  for (sclDataType_t dt : {sclFloat32, sclBfloat16, sclFloat16, sclFloat8e4m3, sclFloat8e5m2}) {
    const size_t es = dtype_size(dt);
    for (size_t count : {size_t(1), size_t(31), size_t(32), size_t(33), size_t(1023), size_t(1024),
                         size_t(1025), size_t(7168)}) {
      for (int nsrc = 1; nsrc <= 5; ++nsrc) {
        std::vector<std::vector<unsigned char>> in(size_t(nsrc),
                                                   std::vector<unsigned char>(count * es + 3));
        Srcs srcs;
        std::vector<const void*> ptrs;
        std::vector<float> w(static_cast<size_t>(nsrc));
        for (int k = 0; k < nsrc; ++k) {
          fill_random(dt, in[size_t(k)].data() + k % 3, count, rng, /*allow_nan=*/k == 2);
          srcs.push_back(in[size_t(k)].data() + k % 3);
          ptrs.push_back(srcs.back());
          w[size_t(k)] = k == 3 ? 0.0f : weight(rng);
        }
        std::vector<unsigned char> want(count * es), got(count * es + 1);
        ref_weighted(dt, want.data(), srcs, w.data(), count);
        for (Isa isa : supported_isas()) {
          weighted_sum_n_isa(isa, got.data() + 1, ptrs.data(), w.data(), nsrc, count, dt);
          ASSERT_EQ(0, std::memcmp(want.data(), got.data() + 1, count * es))
              << isa_name(isa) << " " << dtype_name(dt) << " count " << count << " nsrc " << nsrc;
        }
      }
    }
  }
}

TEST(ReduceApi, NamesAndDispatch) {
  EXPECT_STREQ(op_name(sclAvg), "avg");
  EXPECT_STREQ(isa_name(Isa::kAvx512), "avx512");
  EXPECT_TRUE(isa_supported(Isa::kScalar));
  EXPECT_TRUE(isa_supported(active_isa()));
  // reduce_n uses active_isa(); dst may be the first source.
  std::vector<float> a = {1, 2, 3}, b = {10, 20, 30};
  const void* srcs[] = {a.data(), b.data()};
  reduce_n(a.data(), srcs, 2, a.size(), sclFloat32, sclSum, 0);
  EXPECT_EQ(a, (std::vector<float>{11, 22, 33}));
}

}  // namespace
}  // namespace stratacl::reduce
