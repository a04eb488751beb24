// The float <-> narrow conversions of src/reduce/convert.h against a slow reference built from
// first principles (tests/unit/reduce_testing.h): every code widened and round-tripped, every
// halfway case, random floats, and spot values of the documented edge semantics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "reduce_testing.h"

namespace stratacl::reduce {
namespace {

using namespace test_support;

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

}  // namespace
}  // namespace stratacl::reduce
