// The element types of sclDataType_t, one row each: the size of an element, the one name every
// message, tool and test prints, and the other spellings that parsing accepts (nccl-tests'
// names, which scl-bench takes, and the short names of the MoE options).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

#include "stratacl/stratacl.h"

namespace stratacl {

struct DtypeInfo {
  sclDataType_t type;
  const char* name;
  size_t size;                                   // bytes per element
  bool floating = false;                         // a floating-point type (else an integer one)
  std::array<std::string_view, 2> aliases = {};  // also parsed; empty: none
};

// In the order of sclDataType_t: row t describes type t.
inline constexpr DtypeInfo kDtypes[] = {
    {.type = sclInt8, .name = "int8", .size = 1},
    {.type = sclUint8, .name = "uint8", .size = 1},
    {.type = sclInt32, .name = "int32", .size = 4},
    {.type = sclUint32, .name = "uint32", .size = 4},
    {.type = sclInt64, .name = "int64", .size = 8},
    {.type = sclUint64, .name = "uint64", .size = 8},
    {.type = sclFloat16,
     .name = "float16",
     .size = 2,
     .floating = true,
     .aliases = {"half", "fp16"}},
    {.type = sclFloat32,
     .name = "float32",
     .size = 4,
     .floating = true,
     .aliases = {"float", "fp32"}},
    {.type = sclFloat64, .name = "float64", .size = 8, .floating = true, .aliases = {"double"}},
    {.type = sclBfloat16, .name = "bfloat16", .size = 2, .floating = true, .aliases = {"bf16"}},
    {.type = sclFloat8e4m3,
     .name = "fp8e4m3",
     .size = 1,
     .floating = true,
     .aliases = {"fp8", "f8e4m3"}},
    {.type = sclFloat8e5m2, .name = "fp8e5m2", .size = 1, .floating = true, .aliases = {"f8e5m2"}},
};
static_assert(std::size(kDtypes) == size_t(sclNumTypes));
static_assert([] {
  for (size_t i = 0; i < std::size(kDtypes); ++i)
    if (size_t(kDtypes[i].type) != i) return false;
  return true;
}());

// Every type, in the order of sclDataType_t.
inline constexpr std::array<sclDataType_t, std::size(kDtypes)> kAllDtypes = [] {
  std::array<sclDataType_t, std::size(kDtypes)> all{};
  for (size_t i = 0; i < all.size(); ++i) all[i] = kDtypes[i].type;
  return all;
}();

// nullptr for a value outside sclDataType_t.
constexpr const DtypeInfo* dtype_info(sclDataType_t t) {
  return unsigned(t) < unsigned(sclNumTypes) ? &kDtypes[unsigned(t)] : nullptr;
}

// Bytes per element; 0 for an invalid type.
constexpr size_t dtype_size(sclDataType_t t) {
  const DtypeInfo* d = dtype_info(t);
  return d ? d->size : 0;
}

// Whether t is a floating-point type; false for an invalid type.
constexpr bool dtype_floating(sclDataType_t t) {
  const DtypeInfo* d = dtype_info(t);
  return d && d->floating;
}

// The printed name; "invalid" for an invalid type.
constexpr const char* dtype_name(sclDataType_t t) {
  const DtypeInfo* d = dtype_info(t);
  return d ? d->name : "invalid";
}

// The type a name or alias spells; nullopt for any other text.
constexpr std::optional<sclDataType_t> parse_dtype(std::string_view text) {
  for (const DtypeInfo& d : kDtypes) {
    if (text == d.name) return d.type;
    for (std::string_view alias : d.aliases)
      if (!alias.empty() && text == alias) return d.type;
  }
  return std::nullopt;
}

}  // namespace stratacl
