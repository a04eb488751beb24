// Verifiable inputs and the element-by-element check of outputs.
//
// Every input element is an integer chosen by hashing (scheme, rank, element index), so that
// the element type (fp8 e5m2 included) holds it exactly and every partial result of a
// reduction, in any order and with any rounding between steps, stays exact too. Signed types
// below means the signed integers and every floating-point type. With B the type's bound
// (int8/uint8 63; other integers, float, double 2^20; half 1024; bfloat16 128; fp8e4m3 16;
// fp8e5m2 8; every integer of magnitude <= B is exact in the type):
//   kMove   (non-reducing collectives): signed in [-B, B], unsigned in [0, 2B].
//   kMinMax (max, min): the same ranges, every rank contributing.
//   kSum    (sum, avg): element i of rank r is nonzero only when (r + i) mod n < min(n, 4), so
//           at most four ranks contribute to an element whatever n is; a contribution is in
//           [-2, 2] (unsigned: [0, 4]), so every partial sum lies in [-8, 8] (unsigned [0, 16]).
//   kProd   (prod): the same four contributors, values in {-1, 1, 2} (unsigned {1, 2}) and 1
//           elsewhere, so every partial product is +-2^k with k <= 4.
// A wrong kMove or kMinMax element goes unnoticed only when it happens to hold the expected
// value: 1 in 2B + 1 (1 in 17 for fp8e5m2) for a misplaced element.
// avg is expected as the library computes it: integers truncate sum / n, float and double
// divide in their own type, the 16- and 8-bit floating types divide in float and round once;
// floating-point avg may differ by 2 ulp of the type, everything else must match exactly.
#ifndef STRATACL_TOOLS_SCL_BENCH_CHECK_H_
#define STRATACL_TOOLS_SCL_BENCH_CHECK_H_

#include <cstddef>
#include <cstdint>

#include "collectives.h"
#include "stratacl/stratacl.h"

namespace stratacl::bench {

enum class ValueScheme { kMove, kSum, kProd, kMinMax };

// The scheme a collective's inputs follow under reduction operation `op`.
ValueScheme scheme_for(const Collective& collective, sclRedOp_t op);

// Writes the first `elems` input elements of `rank`.
void fill_input(void* dst, size_t elems, sclDataType_t type, ValueScheme scheme, int nranks,
                int rank);

// Fills an output region with a value no correct output can hold (0xAB bytes for integers,
// all-ones bytes, a NaN, for floating-point types), so unwritten elements count as wrong.
void fill_sentinel(void* dst, size_t elems, sclDataType_t type);

// Counts the elements of this rank's output `out` (geometry().output_elems of them) that
// differ from the expected values.
uint64_t count_wrong(const void* out, size_t elems, sclDataType_t type, sclRedOp_t op,
                     ValueScheme scheme, const Collective& collective, const Placement& placement);

}  // namespace stratacl::bench

#endif  // STRATACL_TOOLS_SCL_BENCH_CHECK_H_
