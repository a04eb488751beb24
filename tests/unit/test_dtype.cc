#include <gtest/gtest.h>

#include <string>

#include "core/dtype.h"

using namespace stratacl;

TEST(Dtype, OneNamePrintedEverySpellingParsed) {
  for (sclDataType_t t : kAllDtypes) {
    EXPECT_EQ(parse_dtype(dtype_name(t)), t) << dtype_name(t);
    EXPECT_NE(dtype_size(t), 0u) << dtype_name(t);
  }
  // The spellings command lines already use: scl-bench -d (nccl-tests' names among them) and
  // the MoE options.
  const std::pair<const char*, sclDataType_t> spellings[] = {
      {"int8", sclInt8},         {"uint8", sclUint8},        {"int32", sclInt32},
      {"uint32", sclUint32},     {"int64", sclInt64},        {"uint64", sclUint64},
      {"float16", sclFloat16},   {"half", sclFloat16},       {"fp16", sclFloat16},
      {"float32", sclFloat32},   {"float", sclFloat32},      {"fp32", sclFloat32},
      {"float64", sclFloat64},   {"double", sclFloat64},     {"bfloat16", sclBfloat16},
      {"bf16", sclBfloat16},     {"fp8e4m3", sclFloat8e4m3}, {"fp8", sclFloat8e4m3},
      {"f8e4m3", sclFloat8e4m3}, {"fp8e5m2", sclFloat8e5m2}, {"f8e5m2", sclFloat8e5m2}};
  for (const auto& [text, t] : spellings) EXPECT_EQ(parse_dtype(text), t) << text;
  for (const char* text : {"", "all", "Float", "float8", "int", "invalid"})
    EXPECT_FALSE(parse_dtype(text).has_value()) << text;

  EXPECT_STREQ(dtype_name(sclFloat32), "float32");
  EXPECT_STREQ(dtype_name(sclNumTypes), "invalid");
  EXPECT_EQ(dtype_size(sclBfloat16), 2u);
  EXPECT_EQ(dtype_size(sclFloat64), 8u);
  EXPECT_EQ(dtype_size(sclNumTypes), 0u);
  EXPECT_EQ(dtype_info(sclNumTypes), nullptr);
  for (sclDataType_t t : {sclInt8, sclUint8, sclInt32, sclUint32, sclInt64, sclUint64, sclNumTypes})
    EXPECT_FALSE(dtype_floating(t)) << dtype_name(t);
  for (sclDataType_t t :
       {sclFloat16, sclFloat32, sclFloat64, sclBfloat16, sclFloat8e4m3, sclFloat8e5m2})
    EXPECT_TRUE(dtype_floating(t)) << dtype_name(t);
}
