// Scalar kernels: the baseline every other ISA must match bit for bit. Built with
// -fno-tree-vectorize (src/CMakeLists.txt), so this is the plain element loop of kernels_impl.h.
#include "reduce/kernels_impl.h"
#include "reduce/reduce.h"

namespace stratacl::reduce::detail {

void reduce_n_scalar(void* dst, const void* const* srcs, int nsrc, size_t count, sclDataType_t dt,
                     sclRedOp_t op, int avg_divisor) {
  reduce_n_impl<GenericConverters>(dst, srcs, nsrc, count, dt, op, avg_divisor);
}

void weighted_sum_n_scalar(void* dst, const void* const* srcs, const float* weights, int nsrc,
                           size_t count, sclDataType_t dt) {
  weighted_sum_impl<GenericConverters>(dst, srcs, weights, nsrc, count, dt);
}

}  // namespace stratacl::reduce::detail
