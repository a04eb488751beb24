// Names of the reduction operations scl-bench exercises. The element types, their sizes and
// names are the library's table (core/dtype.h, included here for every user of this header).
#ifndef STRATACL_TOOLS_SCL_BENCH_DATATYPES_H_
#define STRATACL_TOOLS_SCL_BENCH_DATATYPES_H_

#include <optional>
#include <string_view>

#include "core/dtype.h"
#include "stratacl/stratacl.h"

namespace stratacl::bench {

// Every reduction operation, in the order `-o all` runs them.
inline constexpr sclRedOp_t kAllOps[] = {sclSum, sclProd, sclMax, sclMin, sclAvg};

std::string_view op_name(sclRedOp_t op);
std::optional<sclRedOp_t> parse_op(std::string_view name);

}  // namespace stratacl::bench

#endif  // STRATACL_TOOLS_SCL_BENCH_DATATYPES_H_
