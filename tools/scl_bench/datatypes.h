// Names and sizes of the element types and reduction operations scl-bench exercises.
#ifndef STRATACL_TOOLS_SCL_BENCH_DATATYPES_H_
#define STRATACL_TOOLS_SCL_BENCH_DATATYPES_H_

#include <cstddef>
#include <optional>
#include <string_view>

#include "stratacl/stratacl.h"

namespace stratacl::bench {

// Every element type, in the order `-d all` runs them (the order of sclDataType_t).
inline constexpr sclDataType_t kAllTypes[] = {
    sclInt8,    sclUint8,   sclInt32,   sclUint32,   sclInt64,      sclUint64,
    sclFloat16, sclFloat32, sclFloat64, sclBfloat16, sclFloat8e4m3, sclFloat8e5m2};

// Every reduction operation, in the order `-o all` runs them.
inline constexpr sclRedOp_t kAllOps[] = {sclSum, sclProd, sclMax, sclMin, sclAvg};

// Bytes per element.
size_t type_size(sclDataType_t type);

// The name printed in the `type` column (nccl-tests spelling where one exists).
std::string_view type_name(sclDataType_t type);

// Accepts the printed names plus the aliases float16, float32 and float64.
std::optional<sclDataType_t> parse_type(std::string_view name);

std::string_view op_name(sclRedOp_t op);
std::optional<sclRedOp_t> parse_op(std::string_view name);

}  // namespace stratacl::bench

#endif  // STRATACL_TOOLS_SCL_BENCH_DATATYPES_H_
