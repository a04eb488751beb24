#include "datatypes.h"

#include <array>

namespace stratacl::bench {
namespace {

struct TypeEntry {
  sclDataType_t type;
  std::string_view name;   // printed and accepted
  std::string_view alias;  // also accepted; empty when there is none
  size_t size;
};

constexpr std::array<TypeEntry, 12> kTypes = {{
    {sclInt8, "int8", "", 1},
    {sclUint8, "uint8", "", 1},
    {sclInt32, "int32", "", 4},
    {sclUint32, "uint32", "", 4},
    {sclInt64, "int64", "", 8},
    {sclUint64, "uint64", "", 8},
    {sclFloat16, "half", "float16", 2},
    {sclFloat32, "float", "float32", 4},
    {sclFloat64, "double", "float64", 8},
    {sclBfloat16, "bfloat16", "", 2},
    {sclFloat8e4m3, "fp8e4m3", "", 1},
    {sclFloat8e5m2, "fp8e5m2", "", 1},
}};

struct OpEntry {
  sclRedOp_t op;
  std::string_view name;
};

constexpr std::array<OpEntry, 5> kOps = {{
    {sclSum, "sum"},
    {sclProd, "prod"},
    {sclMax, "max"},
    {sclMin, "min"},
    {sclAvg, "avg"},
}};

const TypeEntry* find_type(sclDataType_t type) {
  for (const TypeEntry& entry : kTypes) {
    if (entry.type == type) return &entry;
  }
  return nullptr;
}

}  // namespace

size_t type_size(sclDataType_t type) {
  const TypeEntry* entry = find_type(type);
  return entry != nullptr ? entry->size : 0;
}

std::string_view type_name(sclDataType_t type) {
  const TypeEntry* entry = find_type(type);
  return entry != nullptr ? entry->name : "?";
}

std::optional<sclDataType_t> parse_type(std::string_view name) {
  for (const TypeEntry& entry : kTypes) {
    if (name == entry.name || (!entry.alias.empty() && name == entry.alias)) return entry.type;
  }
  return std::nullopt;
}

std::string_view op_name(sclRedOp_t op) {
  for (const OpEntry& entry : kOps) {
    if (entry.op == op) return entry.name;
  }
  return "?";
}

std::optional<sclRedOp_t> parse_op(std::string_view name) {
  for (const OpEntry& entry : kOps) {
    if (name == entry.name) return entry.op;
  }
  return std::nullopt;
}

}  // namespace stratacl::bench
