#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>

#include "bootstrap/launcher_env.h"
#include "bootstrap/rendezvous.h"
#include "bootstrap/root.h"
#include "bootstrap/socket.h"
#include "bootstrap/unique_id.h"
#include "bootstrap/wire.h"

using namespace stratacl;
using namespace stratacl::bootstrap;

TEST(UniqueId, RoundTripsAndRejectsGarbage) {
  IdData d;
  d.root = *parse_host_port("127.0.0.1:4242", Deadline::after_ms(1000));
  d.secret = *random_secret();
  sclUniqueId id = encode_id(d);
  Result<IdData> back = decode_id(id);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->root.sin_port, d.root.sin_port);
  EXPECT_TRUE(secret_equal(back->secret, d.secret));

  sclUniqueId bad = id;
  bad.internal[0] ^= 1;  // magic
  EXPECT_EQ(decode_id(bad).status().code(), sclInvalidArgument);
  bad = id;
  bad.internal[4] = 9;  // version
  EXPECT_FALSE(decode_id(bad).ok());
  sclUniqueId zero{};
  EXPECT_FALSE(decode_id(zero).ok());
}

TEST(UniqueId, SecretHexRoundTrip) {
  Secret s = *random_secret();
  EXPECT_TRUE(secret_equal(*parse_secret_hex(secret_hex(s)), s));
  EXPECT_FALSE(parse_secret_hex("abc").ok());
  EXPECT_FALSE(parse_secret_hex(std::string(32, 'g')).ok());
}

// Ranks of one job derive the same secrets independently, possibly from different builds: these
// values may never change.
TEST(UniqueId, DerivedSecretsAreStable) {
  Secret s;
  for (size_t i = 0; i < s.size(); ++i) s[i] = uint8_t(i);
  EXPECT_EQ(secret_hex(secret_for_generation(s, 3)), "409a3a54d03d0b48add0253edcda1c83");
  EXPECT_TRUE(secret_equal(secret_for_generation(s, 0), s));

  std::map<std::string, std::string> env = {
      {"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}};
  Result<LaunchEnv> e = read_launch_env([&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  ASSERT_TRUE(e.ok()) << e.status().message();
  // From "torchrun||127.0.0.1:29501|2" (little-endian hosts).
  EXPECT_EQ(secret_hex(e->id.secret), "da06ee269cd128dd5350f4b8de84a194");
}

TEST(Wire, HelloAndTableRoundTrip) {
  Secret s = *random_secret();
  RankInfo me;
  me.rank = 2, me.nranks = 4, me.pid = 1234, me.uid = 5, me.heap_nonce = 99, me.cb_offset = 4096;
  std::vector<uint8_t> msg = encode_hello(s, me);
  Result<Header> h = decode_header(msg);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->type, MsgType::kHello);
  Result<Hello> hello = decode_hello(std::span(msg).subspan(kHeaderBytes));
  ASSERT_TRUE(hello.ok());
  EXPECT_EQ(hello->info.cb_offset, 4096u);
  EXPECT_TRUE(secret_equal(hello->secret, s));

  std::vector<RankInfo> all(3);
  for (int i = 0; i < 3; ++i) all[i].rank = i, all[i].nranks = 3, all[i].pid = 100 + i;
  std::vector<uint8_t> t = encode_table(all);
  Result<std::vector<RankInfo>> back = decode_table(std::span(t).subspan(kHeaderBytes), 3);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)[2].pid, 102);
  EXPECT_FALSE(decode_table(std::span(t).subspan(kHeaderBytes), 4).ok());  // wrong size
}

TEST(Wire, EveryTruncationAndBitFlipIsHandled) {
  Secret s{};
  RankInfo me;
  me.rank = 0, me.nranks = 1, me.pid = 1;
  std::vector<uint8_t> msg = encode_hello(s, me);
  for (size_t n = 0; n < msg.size(); ++n) {
    std::vector<uint8_t> cut(msg.begin(), msg.begin() + long(n));
    if (n < kHeaderBytes) {
      EXPECT_FALSE(decode_header(cut).ok());
    } else {
      EXPECT_FALSE(decode_hello(std::span(cut).subspan(kHeaderBytes)).ok());
    }
  }
  std::mt19937 rng(1);
  for (int i = 0; i < 5000; ++i) {
    std::vector<uint8_t> m = msg;
    m[rng() % m.size()] ^= uint8_t(1 << (rng() % 8));
    if (decode_header(m).ok()) (void)decode_hello(std::span(m).subspan(kHeaderBytes));
  }
  RankInfo bad = me;
  bad.rank = 5;  // out of range for nranks 1
  std::vector<uint8_t> b = encode_hello(s, bad);
  EXPECT_FALSE(decode_hello(std::span(b).subspan(kHeaderBytes)).ok());
}

TEST(Rendezvous, RootServesRanksAndDropsStrangers) {
  IdData id;
  id.root = *parse_host_port("127.0.0.1:1", Deadline::after_ms(1000));
  id.root.sin_port = 0;  // any free port
  id.secret = *random_secret();
  Result<UniqueFd> l = tcp_listen(&id.root);
  ASSERT_TRUE(l.ok());
  std::jthread root = start_root(std::move(*l), id.secret, 10000);

  // A stranger without the secret gets nothing.
  IdData stranger = id;
  stranger.secret[0] ^= 0xff;
  RankInfo sr;
  sr.rank = 0, sr.nranks = 2, sr.pid = 1;
  Result<Joined> s = rendezvous(stranger, sr, Deadline::after_ms(300));
  EXPECT_FALSE(s.ok());

  std::vector<Result<Joined>> out;
  for (int r = 0; r < 2; ++r) out.emplace_back(Status());
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r) {
    ts.emplace_back([&, r] {
      RankInfo me;
      me.rank = r, me.nranks = 2, me.pid = 1000 + r, me.cb_offset = uint64_t(r) * 64;
      out[size_t(r)] = rendezvous(id, me, Deadline::after_ms(5000));
    });
  }
  for (auto& t : ts) t.join();
  for (auto& o : out) {
    ASSERT_TRUE(o.ok()) << o.status().message();
    EXPECT_EQ(o->table[1].pid, 1001);
  }
}

TEST(Rendezvous, MismatchedRankCountsFailEveryone) {
  IdData id;
  id.root = *parse_host_port("127.0.0.1:1", Deadline::after_ms(1000));
  id.root.sin_port = 0;  // any free port
  id.secret = *random_secret();
  Result<UniqueFd> l = tcp_listen(&id.root);
  ASSERT_TRUE(l.ok());
  std::jthread root = start_root(std::move(*l), id.secret, 3000);
  RankInfo a, b;
  a.rank = 0, a.nranks = 2, a.pid = 1;
  b.rank = 1, b.nranks = 3, b.pid = 2;
  Result<Joined> ra = Status(), rb = Status();
  std::thread t([&] { ra = rendezvous(id, a, Deadline::after_ms(3000)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  rb = rendezvous(id, b, Deadline::after_ms(3000));
  t.join();
  EXPECT_FALSE(ra.ok());
  EXPECT_FALSE(rb.ok());
  EXPECT_NE(rb.status().message().find("nranks"), std::string::npos) << rb.status().message();
}

TEST(LaunchEnv, ReadsEveryLauncher) {
  std::map<std::string, std::string> env;
  auto look = [&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_FALSE(read_launch_env(look).ok());  // nothing set

  env = {{"STRATACL_RANK", "1"},
         {"STRATACL_WORLD_SIZE", "4"},
         {"STRATACL_ROOT_ADDR", "127.0.0.1:5000"},
         {"STRATACL_JOB_SECRET", std::string(32, 'a')}};
  Result<LaunchEnv> e = read_launch_env(look);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->launcher, "stratarun");
  EXPECT_EQ(e->rank, 1);
  EXPECT_FALSE(e->serve_root);

  env = {
      {"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}};
  e = read_launch_env(look);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->launcher, "torchrun");
  EXPECT_EQ(ntohs(e->id.root.sin_port), 29501);  // torchrun's store owns MASTER_PORT
  EXPECT_TRUE(e->serve_root);

  env = {{"OMPI_COMM_WORLD_RANK", "3"},
         {"OMPI_COMM_WORLD_SIZE", "4"},
         {"STRATACL_ROOT_ADDR", "localhost:7000"}};
  ASSERT_TRUE(read_launch_env(look).ok());
  EXPECT_EQ(read_launch_env(look)->launcher, "openmpi");
  env = {{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"STRATACL_ROOT_ADDR", "127.0.0.1:7000"}};
  EXPECT_EQ(read_launch_env(look)->launcher, "mpich");
  env = {{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"STRATACL_ROOT_ADDR", "127.0.0.1:7000"}};
  EXPECT_EQ(read_launch_env(look)->launcher, "slurm");

  env = {{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}};  // no address anywhere
  Result<LaunchEnv> none = read_launch_env(look);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("STRATACL_ROOT_ADDR"), std::string::npos);
  env = {
      {"STRATACL_RANK", "4"}, {"STRATACL_WORLD_SIZE", "4"}, {"STRATACL_ROOT_ADDR", "127.0.0.1:1"}};
  EXPECT_EQ(read_launch_env(look).status().code(), sclInvalidArgument);
  env = {{"STRATACL_RANK", "x"}, {"STRATACL_WORLD_SIZE", "4"}};
  EXPECT_FALSE(read_launch_env(look).ok());
}

TEST(Rendezvous, RanksOnSeveralHostsShareTheirNetworkAddresses) {
  IdData id;
  id.root = *parse_host_port("127.0.0.1:1", Deadline::after_ms(1000));
  id.root.sin_port = 0;
  id.secret = *random_secret();
  Result<UniqueFd> l = tcp_listen(&id.root);
  ASSERT_TRUE(l.ok());
  std::jthread root = start_root(std::move(*l), id.secret, 5000);
  std::vector<Result<std::vector<std::vector<uint8_t>>>> out(3, Status());
  std::vector<std::thread> ts;
  for (int r = 0; r < 3; ++r) {
    ts.emplace_back([&, r] {
      RankInfo me;
      me.rank = r, me.nranks = 3, me.pid = 1000 + r, me.host_hash = uint64_t(r / 2);
      Result<Joined> j = rendezvous(id, me, Deadline::after_ms(5000));
      if (!j.ok()) return void(out[size_t(r)] = j.status());
      EXPECT_TRUE(spans_hosts(j->table));
      const std::vector<uint8_t> mine(size_t(r) * 7, uint8_t(r + 1));  // rank 0's is empty
      out[size_t(r)] = share_blobs(*j, mine, Deadline::after_ms(5000));
    });
  }
  for (auto& t : ts) t.join();
  for (auto& o : out) {
    ASSERT_TRUE(o.ok()) << o.status().message();
    ASSERT_EQ(o->size(), 3u);
    for (size_t r = 0; r < 3; ++r) EXPECT_EQ((*o)[r], std::vector<uint8_t>(r * 7, uint8_t(r + 1)));
  }
}

TEST(Wire, BlobTablesRejectWhatTheyCannotHold) {
  const std::vector<uint8_t> big(kMaxBlob + 1, 1);
  std::vector<uint8_t> msg = encode_blob(big);
  EXPECT_FALSE(decode_blob(std::span(msg).subspan(kHeaderBytes)).ok());
  msg = encode_blobs({{1, 2}, {3}});
  std::span<const uint8_t> payload = std::span(msg).subspan(kHeaderBytes);
  EXPECT_TRUE(decode_blobs(payload, 2).ok());
  EXPECT_FALSE(decode_blobs(payload, 3).ok());
  EXPECT_FALSE(decode_blobs(payload.first(payload.size() - 1), 2).ok());
}
