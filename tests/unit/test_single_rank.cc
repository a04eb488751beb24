// A one-rank communicator built in-process through the public C++ facade: every collective is
// the identity (or a copy), which checks the whole call path without other processes.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "stratacl/stratacl.hpp"

TEST(SingleRank, FacadeCollectivesAndErrors) {
  sclUniqueId id;
  ASSERT_EQ(sclGetUniqueId(&id), sclSuccess);
  scl::Comm comm = scl::Comm::init_rank(1, id, 0);
  EXPECT_EQ(comm.size(), 1);
  EXPECT_EQ(comm.rank(), 0);

  scl::HeapBuffer<float> a(1000), b(1000);
  std::iota(a.begin(), a.end(), 1.0f);
  comm.all_reduce<float>(a.span(), b.span());
  for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(b[i], float(i + 1));
  comm.all_reduce<float>(b.span(), sclMax);
  EXPECT_EQ(b[999], 1000.0f);

  std::vector<double> m(64, 2.0), out(64, 0.0);  // foreign memory takes the staged path
  comm.all_gather<double>(m, out);
  EXPECT_EQ(out[63], 2.0);

  scl::Stream s;
  std::vector<int32_t> x(32, 7), y(32, 0);
  comm.all_reduce<int32_t>(x, y, sclSum, s.get());
  s.synchronize();
  EXPECT_EQ(y[31], 7);
  EXPECT_TRUE(s.done());

  scl::Comm sub = comm.split(0, 0);
  EXPECT_EQ(sub.size(), 1);
  sub.barrier();

  try {
    comm.broadcast<float>(a.span(), 3);
    FAIL() << "root 3 of 1 rank was accepted";
  } catch (const scl::Error& e) {
    EXPECT_EQ(e.code(), sclInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("root"), std::string::npos) << e.what();
  }
}

// MoE through the facade on one rank: every token's row comes back to it (token-major, each
// token once), and combine returns the expert outputs unchanged (one destination per token).
TEST(SingleRank, FacadeMoe) {
  sclUniqueId id;
  ASSERT_EQ(sclGetUniqueId(&id), sclSuccess);
  scl::Comm comm = scl::Comm::init_rank(1, id, 0);
  sclMoeConfig_t cfg = SCL_MOE_CONFIG_INITIALIZER;
  cfg.hidden = 16, cfg.topk = 2, cfg.numExperts = 4, cfg.maxTokensPerRank = 3;
  cfg.xType = cfg.recvType = cfg.outType = sclFloat32;
  scl::Moe moe(comm, cfg);
  EXPECT_EQ(moe.local_experts(), 4);
  EXPECT_EQ(moe.max_recv_rows(), 3u);
  scl::HeapBuffer<float> x(3 * 16), rx(3 * 16), y(3 * 16), rw(3 * 2);
  scl::HeapBuffer<int64_t> ids(3 * 2), rids(3 * 2);
  scl::HeapBuffer<int> per_expert(4), rows(1);
  std::iota(x.begin(), x.end(), 0.0f);
  const int64_t chosen[6] = {3, 1, -1, 0, 2, 3};
  std::copy(chosen, chosen + 6, ids.begin());
  const sclMoeTokens_t in{x.data(), nullptr, ids.data(), nullptr, 3};
  sclMoeRecv_t out{rx.data(), nullptr, rids.data(), rw.data(), per_expert.data(), rows.data()};
  scl::MoeHandle h = moe.dispatch(in, out);
  ASSERT_EQ(rows[0], 3);
  for (size_t i = 0; i < 3 * 16; ++i) ASSERT_EQ(rx[i], x[i]);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(rids[size_t(i)], chosen[i]);  // local ids = global ids
  EXPECT_EQ(per_expert[3], 2);
  moe.combine(h, rx.data(), nullptr, y.data());
  for (size_t i = 0; i < 3 * 16; ++i) ASSERT_EQ(y[i], x[i]);
  moe.dispatch(in, out, h);  // reuse
  EXPECT_EQ(rows[0], 3);
}
