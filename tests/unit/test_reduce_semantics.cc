// The reduction kernels' documented edge semantics (NaN, signed zeros, integer wrap, average's
// division), weighted_sum_n (MoE combine) against a plain loop, and the names and dispatch of the
// API, on every ISA this machine runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "reduce_testing.h"

namespace stratacl::reduce {
namespace {

using namespace test_support;

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
