#include "datatypes.h"

#include <array>

namespace stratacl::bench {
namespace {

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

}  // namespace

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
