#include <gtest/gtest.h>

#include <set>

#include "core/config.h"

using namespace stratacl;

TEST(Config, ParsesSuffixesAndRanges) {
  const VarSpec& s = spec(Var::kStagingBytes);
  EXPECT_EQ(parse_setting(s, "64K")->value, 64 << 10);
  EXPECT_EQ(parse_setting(s, "32M")->value, 32 << 20);
  EXPECT_EQ(parse_setting(s, "1g")->value, 1ll << 30);
  EXPECT_FALSE(parse_setting(s, "1").ok());    // below the minimum
  EXPECT_FALSE(parse_setting(s, "12Q").ok());  // junk suffix
  EXPECT_FALSE(parse_setting(s, "1KB").ok());  // junk after the suffix
  EXPECT_FALSE(parse_setting(s, "").ok());
  EXPECT_FALSE(parse_setting(s, "abc").ok());
  EXPECT_FALSE(parse_setting(s, "99999999999G").ok());            // overflows in the suffix
  EXPECT_FALSE(parse_setting(s, "99999999999999999999").ok());    // overflows as digits
  EXPECT_EQ(parse_setting(spec(Var::kSpinNs), "-1")->value, -1);  // negative where allowed
  Result<Setting> bad = parse_setting(spec(Var::kTimeoutMs), "0");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("STRATACL_TIMEOUT_MS"), std::string::npos);
}

TEST(Config, ChoicesAndText) {
  const VarSpec& isa = spec(Var::kIsa);
  EXPECT_EQ(parse_setting(isa, "avx2")->value, 2);
  EXPECT_EQ(parse_setting(isa, "scalar")->value, 3);
  Result<Setting> bad = parse_setting(isa, "sse9");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("STRATACL_ISA=\"sse9\" is not one of: auto, avx512"),
            std::string::npos)
      << bad.status().message();
  EXPECT_EQ(parse_setting(spec(Var::kHostId), "rack7/node3")->text, "rack7/node3");
}

TEST(Config, EveryVariableHasItsDefaultInTheTable) {
  for (const VarSpec& v : all_vars()) {
    switch (v.kind) {
      case VarKind::kNumber: {
        const int64_t d = v.computed_default ? v.computed_default() : v.number_default;
        EXPECT_GE(d, v.min) << v.name;
        EXPECT_LE(d, v.max) << v.name;
        break;
      }
      case VarKind::kChoice:
        EXPECT_FALSE(v.choices.empty()) << v.name;
        break;
      case VarKind::kText:
        break;
    }
    EXPECT_NE(std::string(v.help), "") << v.name;
  }
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

  cfg.threads = 0;  // the cost model's choice
  EXPECT_TRUE(resolve_comm_config(&cfg).ok());
  cfg.threads = -1;  // below the minimum of 0
  EXPECT_FALSE(resolve_comm_config(&cfg).ok());
  cfg.threads = 65;  // above the maximum of 64
  EXPECT_FALSE(resolve_comm_config(&cfg).ok());
  sclConfig_t raw{};  // not initialised with the macro
  Result<CommConfig> r = resolve_comm_config(&raw);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), sclInvalidArgument);
}
