#include <gtest/gtest.h>

#include <set>

#include "core/config.h"

using namespace stratacl;

TEST(Config, ParsesSuffixesAndRanges) {
  const VarSpec& s = spec(Var::kStagingBytes);
  EXPECT_EQ(*parse_number(s, "64K"), 64 << 10);
  EXPECT_EQ(*parse_number(s, "32M"), 32 << 20);
  EXPECT_EQ(*parse_number(s, "1g"), 1ll << 30);
  EXPECT_FALSE(parse_number(s, "1").ok());    // below the minimum
  EXPECT_FALSE(parse_number(s, "12Q").ok());  // junk suffix
  EXPECT_FALSE(parse_number(s, "").ok());
  EXPECT_FALSE(parse_number(s, "abc").ok());
  EXPECT_FALSE(parse_number(s, "99999999999G").ok());  // overflow
  Result<int64_t> bad = parse_number(spec(Var::kTimeoutMs), "0");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("STRATACL_TIMEOUT_MS"), std::string::npos);
}

TEST(Config, EveryVariableIsRegisteredOnce) {
  std::set<std::string> names;
  int i = 0;
  for (const VarSpec& v : all_vars()) {
    EXPECT_EQ(int(v.id), i++);
    EXPECT_TRUE(names.insert(v.name).second) << v.name;
    EXPECT_EQ(std::string(v.name).rfind("STRATACL_", 0), 0u);
  }
}

TEST(Config, UserConfigOverridesAndIsValidated) {
  sclConfig_t cfg = SCL_CONFIG_INITIALIZER;
  cfg.timeoutMs = 1234;
  cfg.commName = "tp";
  Result<CommConfig> c = resolve_comm_config(&cfg);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->timeout_ms.value, 1234);
  EXPECT_EQ(c->timeout_ms.source, Source::kConfig);
  EXPECT_EQ(c->threads.source, Source::kDefault);
  EXPECT_EQ(c->name, "tp");

  cfg.threads = 0;  // below the minimum of 1
  EXPECT_FALSE(resolve_comm_config(&cfg).ok());
  sclConfig_t raw{};  // not initialised with the macro
  Result<CommConfig> r = resolve_comm_config(&raw);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), sclInvalidArgument);
}
