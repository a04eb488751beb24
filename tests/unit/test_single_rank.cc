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
