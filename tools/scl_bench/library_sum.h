// Combine's row sums for the alltoallv baselines (moe_workload::SumRows) with StrataCL's own
// reduction kernels: the bits of moe_workload::sum_rows, faster, so that the comparisons measure
// the communication, not the arithmetic. scl-bench moe and its MPI peer both link the library.
#ifndef STRATACL_TOOLS_SCL_BENCH_LIBRARY_SUM_H_
#define STRATACL_TOOLS_SCL_BENCH_LIBRARY_SUM_H_

#include <cstring>

#include "core/dtype.h"
#include "reduce/reduce.h"

namespace stratacl::bench {

inline void library_sum(void* dst, const void* const* rows, const float* weights, int n,
                        size_t count, sclDataType_t type) {
  if (n == 0) {
    std::memset(dst, 0, count * dtype_size(type));
  } else if (weights) {
    reduce::weighted_sum_n(dst, rows, weights, n, count, type);
  } else {
    reduce::reduce_n(dst, rows, n, count, type, sclSum, 1);
  }
}

}  // namespace stratacl::bench

#endif  // STRATACL_TOOLS_SCL_BENCH_LIBRARY_SUM_H_
