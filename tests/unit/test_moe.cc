// MoE pieces that need no processes (src/moe): plan validation naming the field at fault, the
// routing's prefix sums against a brute-force count, and fp8 quantisation against a reference
// that searches the e4m3 grid (not convert.h) and against the format's error bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "moe/plan.h"
#include "moe/quantize.h"
#include "moe/routing.h"
#include "reduce/convert.h"

namespace stratacl::moe {
namespace {

sclMoeConfig_t good_config() {
  sclMoeConfig_t c = SCL_MOE_CONFIG_INITIALIZER;
  c.hidden = 256, c.topk = 2, c.numExperts = 8, c.maxTokensPerRank = 16;
  return c;
}

// The config with one change is refused with sclInvalidArgument naming `field`.
template <typename Change>
void expect_refused(Change change, const char* field, int nranks = 4) {
  sclMoeConfig_t c = good_config();
  change(c);
  Result<Plan> p = Plan::make(&c, nranks, 0);
  ASSERT_FALSE(p.ok()) << field;
  EXPECT_EQ(p.status().code(), sclInvalidArgument) << field;
  EXPECT_NE(p.status().message().find(field), std::string::npos) << p.status().message();
}

TEST(MoePlan, ValidatesEveryField) {
  ASSERT_TRUE(Plan::make(nullptr, 2, 0).status().code() == sclInvalidArgument);
  expect_refused([](sclMoeConfig_t& c) { c.magic = 0; }, "SCL_MOE_CONFIG_INITIALIZER");
  expect_refused([](sclMoeConfig_t& c) { c.size = 8; }, "SCL_MOE_CONFIG_INITIALIZER");
  expect_refused([](sclMoeConfig_t& c) { c.hidden = 0; }, "hidden");
  expect_refused([](sclMoeConfig_t& c) { c.numExperts = 0; }, "numExperts");
  expect_refused([](sclMoeConfig_t& c) { c.topk = 9; }, "topk");
  expect_refused([](sclMoeConfig_t& c) { c.topk = 0; }, "topk");
  expect_refused([](sclMoeConfig_t& c) { c.maxTokensPerRank = 0; }, "maxTokensPerRank");
  expect_refused([](sclMoeConfig_t& c) { c.layout = sclMoeLayout_t(7); }, "layout");
  expect_refused([](sclMoeConfig_t& c) { c.xType = sclInt32; }, "xType");
  expect_refused([](sclMoeConfig_t& c) { c.recvType = sclFloat8e5m2; }, "recvType");
  expect_refused([](sclMoeConfig_t& c) { c.outType = sclFloat8e4m3; }, "outType");
  // Rows are received as sent, or as fp8 from bf16 only.
  expect_refused([](sclMoeConfig_t& c) { c.xType = sclFloat16, c.recvType = sclFloat8e4m3; },
                 "recvType");
  expect_refused([](sclMoeConfig_t& c) { c.xType = sclFloat32, c.recvType = sclBfloat16; },
                 "recvType");
  // fp8 needs whole 128-channel blocks.
  expect_refused([](sclMoeConfig_t& c) { c.hidden = 200, c.recvType = sclFloat8e4m3; }, "hidden");
  // E not divisible by R without a map; a map naming a rank that does not exist.
  expect_refused([](sclMoeConfig_t& c) { c.numExperts = 6; }, "numExperts");
  static const int bad_map[8] = {0, 1, 2, 3, 0, 1, 2, 4};
  expect_refused([](sclMoeConfig_t& c) { c.expertRank = bad_map; }, "expertRank[7]");
  expect_refused([](sclMoeConfig_t& c) { c.maxTokensPerRank = 1 << 30, c.hidden = 1 << 30; },
                 "overflow");
}

TEST(MoePlan, OwnersLocalIdsAndSizes) {
  sclMoeConfig_t c = good_config();
  Result<Plan> p = Plan::make(&c, 4, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->local_experts, 2);
  EXPECT_EQ(p->owner, (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(p->max_recv_rows, 4u * 16u);
  // Explicit map, E not divisible by R, rank 2 owning none; local ids by ascending global id.
  static const int map[7] = {3, 0, 3, 1, 0, 3, 1};
  c.expertRank = map, c.numExperts = 7, c.layout = sclMoeExpertMajor;
  const int owned[4] = {2, 2, 0, 3};
  for (int r = 0; r < 4; ++r) {
    Result<Plan> q = Plan::make(&c, 4, r);
    ASSERT_TRUE(q.ok()) << q.status().message();
    EXPECT_EQ(q->local_index, (std::vector<int>{0, 0, 1, 0, 1, 2, 1}));
    EXPECT_EQ(q->local_experts, owned[r]);
    EXPECT_EQ(q->max_recv_rows, size_t(q->local_experts) * 4 * 16);
  }
  // Every field that ranks must share changes the digest.
  sclMoeConfig_t d = c;
  d.hidden = 512;
  EXPECT_NE(Plan::make(&c, 4, 0)->digest, Plan::make(&d, 4, 0)->digest);
  EXPECT_EQ(Plan::make(&c, 4, 0)->digest, Plan::make(&c, 4, 3)->digest);
  static const int map2[7] = {3, 0, 3, 1, 0, 3, 0};
  d = c;
  d.expertRank = map2;
  EXPECT_NE(Plan::make(&c, 4, 0)->digest, Plan::make(&d, 4, 0)->digest);
}

TEST(MoeRouting, CheckTopkNamesTheEntry) {
  sclMoeConfig_t c = good_config();
  const Plan p = *Plan::make(&c, 4, 0);
  const int64_t ok[4] = {0, -1, -1, -1};
  EXPECT_TRUE(check_topk(p, ok, 2, "ids").ok());
  const int64_t out_of_range[4] = {0, 1, 8, 2};
  Status s = check_topk(p, out_of_range, 2, "ids");
  EXPECT_EQ(s.code(), sclInvalidArgument);
  EXPECT_NE(s.message().find("ids[1, 0]"), std::string::npos) << s.message();
  const int64_t twice[4] = {0, 1, 5, 5};
  s = check_topk(p, twice, 2, "ids");
  EXPECT_NE(s.message().find("chosen twice"), std::string::npos) << s.message();
  const int64_t below[2] = {-2, 0};
  EXPECT_FALSE(check_topk(p, below, 1, "ids").ok());
}

// Prefix sums against counting every pair by brute force, on random routings with -1 entries.
TEST(MoeRouting, PrefixSumsMatchBruteForce) {
  std::mt19937_64 rng(9);
  static const int map[11] = {2, 0, 1, 2, 2, 0, 1, 0, 2, 2, 1};
  sclMoeConfig_t c = good_config();
  c.numExperts = 11, c.topk = 4, c.expertRank = map;
  const Plan p = *Plan::make(&c, 3, 0);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<std::vector<int64_t>> ids(3);
    for (int s = 0; s < 3; ++s) {
      const int T = int(rng() % 17);
      for (int t = 0; t < T; ++t) {
        std::vector<int64_t> e(11);
        for (int i = 0; i < 11; ++i) e[size_t(i)] = i;
        std::shuffle(e.begin(), e.end(), rng);
        for (int j = 0; j < 4; ++j) ids[size_t(s)].push_back(rng() % 4 == 0 ? -1 : e[size_t(j)]);
      }
    }
    const Routing r(p, ids);
    for (int s = 0; s <= 3; ++s) {
      for (int d = 0; d < 3; ++d) {
        int64_t rows = 0;
        for (int s2 = 0; s2 < s; ++s2)
          for (int t = 0; t < r.tokens(s2); ++t) {
            bool to_d = false;
            for (int j = 0; j < 4; ++j) {
              const int64_t g = ids[size_t(s2)][size_t(t * 4 + j)];
              to_d = to_d || (g >= 0 && map[g] == d);
            }
            rows += to_d;
          }
        EXPECT_EQ(r.rows_before(d, s), rows) << "d " << d << " s " << s;
      }
      for (int g = 0; g < 11; ++g) {
        int64_t pairs = 0;
        for (int s2 = 0; s2 < s; ++s2)
          for (int64_t id : ids[size_t(s2)]) pairs += id == g;
        EXPECT_EQ(r.pairs_before(g, s), pairs) << "g " << g << " s " << s;
      }
    }
    for (int s = 0; s < 3; ++s) {
      for (int t = 0; t < r.tokens(s); ++t) {
        std::vector<int> want;
        for (int d = 0; d < 3; ++d)
          for (int j = 0; j < 4; ++j) {
            const int64_t g = ids[size_t(s)][size_t(t * 4 + j)];
            if (g >= 0 && map[g] == d) {
              want.push_back(d);
              break;
            }
          }
        const std::span<const int> got = r.destinations(s, t);
        EXPECT_EQ(std::vector<int>(got.begin(), got.end()), want);
      }
    }
  }
}

// Every non-negative finite e4m3 value, from its definition.
std::vector<double> e4m3_grid() {
  std::vector<double> v;
  for (int code = 0; code < 0x7F; ++code) {
    const int e = code >> 3, m = code & 7;
    v.push_back(e == 0 ? std::ldexp(m, -9) : std::ldexp(1.0 + m / 8.0, e - 7));
  }
  return v;
}

// Nearest grid value to |q| (ties to the even code), saturating at 448.
uint8_t nearest_e4m3(float q, const std::vector<double>& grid) {
  const double a = std::fabs(double(q));
  size_t best = 0;
  for (size_t i = 1; i < grid.size(); ++i) {
    const double di = std::fabs(grid[i] - a), db = std::fabs(grid[best] - a);
    if (di < db || (di == db && i % 2 == 0)) best = i;
  }
  return uint8_t(best | (std::signbit(q) ? 0x80 : 0));
}

TEST(MoeQuantize, MatchesGridSearchAndTheFormatBound) {
  const std::vector<double> grid = e4m3_grid();
  std::mt19937_64 rng(5);
  const int H = 512;
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<uint16_t> row(H);
    for (int b = 0; b < H / 128; ++b) {
      // Block magnitudes from 2^-30 (below the 1e-4 clamp) to 2^20; one block all zero.
      const int e = trial == 3 && b == 1 ? -200 : int(rng() % 51) - 30;
      for (int i = 0; i < 128; ++i) {
        const float x = std::ldexp(float(rng() % 10000) / 10000.0f, e) * (rng() % 2 ? -1.0f : 1.0f);
        row[size_t(b * 128 + i)] = e == -200 ? 0 : reduce::float_to_bf16(x);
      }
    }
    std::vector<uint8_t> q(H);
    std::vector<float> scales(H / 128);
    quantize_bf16_to_e4m3(row.data(), H, q.data(), scales.data());
    for (int b = 0; b < H / 128; ++b) {
      float amax = 0;
      for (int i = 0; i < 128; ++i)
        amax = std::max(amax, std::fabs(reduce::bf16_to_float(row[size_t(b * 128 + i)])));
      const float scale = std::max(amax, 1e-4f) / 448.0f;
      ASSERT_EQ(scales[size_t(b)], scale);
      for (int i = 0; i < 128; ++i) {
        const float x = reduce::bf16_to_float(row[size_t(b * 128 + i)]);
        const uint8_t code = q[size_t(b * 128 + i)];
        ASSERT_EQ(code, nearest_e4m3(x / scale, grid)) << "x " << x << " scale " << scale;
        // The format's bound: half a step of the grid at that magnitude (2^-4 relative for
        // normals, 2^-10 of the scale for subnormals), no saturation since |x| <= amax.
        const double deq = grid[code & 0x7F] * (code & 0x80 ? -1.0 : 1.0) * double(scale);
        const double bound = std::max(std::fabs(double(x)) / 16.0, double(scale) / 1024.0);
        ASSERT_LE(std::fabs(deq - double(x)), bound * (1 + 1e-6)) << "x " << x;
      }
    }
  }
}

}  // namespace
}  // namespace stratacl::moe
