// Element-wise reduction kernels: the arithmetic of every reducing collective.
//
// reduce_n() combines `nsrc` equally long input arrays into one output, using the best
// instruction set the CPU offers (scalar, AVX2 or AVX-512). The contract below is what lets ranks
// that run different code paths, or the same rank on different machines, agree bit for bit.
//
// Contract of reduce_n / reduce_n_isa:
//  - Inputs are combined in the fixed order ((srcs[0] op srcs[1]) op srcs[2]) op ...; nothing is
//    reassociated. nsrc >= 1; nsrc == 1 is a copy (plus the avg division and NaN rule below).
//  - dst may be exactly equal to any srcs[i] (same start address); no other overlap is allowed.
//  - Pointers need no alignment at all, not even element alignment; count may be anything (0 ok).
//  - Every output element is bit-identical across ISAs, for every input (NaN included), every
//    alignment and every count.
//  - Integers: sum and prod wrap modulo 2^bits; max/min as usual; avg is the wrapped sum divided by
//    avg_divisor with C integer division (truncating toward zero for the signed types).
//  - float32/float64: IEEE arithmetic in the type itself; avg = sum / (T)avg_divisor.
//    max and min are NCCL's fmaxf/fminf (and IEEE 754-2019's maximumNumber/minimumNumber): a NaN
//    input is skipped, so the result is a NaN only where every input is one, and -0 < +0 (max
//    of +0 and -0 is +0, min is -0). They associate and commute for every input, NaN included,
//    so any grouping of the inputs (the hierarchy's hosts, rings, rounds) gives the same bits.
//  - float16, bfloat16, fp8 e4m3, fp8 e5m2: each input is converted exactly to float32, reduced
//    in float32 in order (avg divides in float32), then rounded ONCE to the destination type,
//    to nearest even, with the overflow rules of convert.h (fp16/bf16 -> inf, fp8 saturates).
//  - NaN results are canonical: every NaN output element is the type's positive quiet NaN
//    (float32 0x7FC00000, float64 0x7FF8000000000000, see convert.h for the narrow types). IEEE
//    leaves the payload of a NaN result unspecified and x86 picks it by operand order, which a
//    vectorising compiler may swap; canonicalising makes the bits deterministic.
//  - The arithmetic runs under the calling thread's MXCSR. With the default (round to nearest,
//    no FTZ/DAZ) the results are as stated; changing it changes every ISA the same way.
#pragma once

#include <cstddef>

#include "stratacl/stratacl.h"

namespace stratacl::reduce {

enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

// "scalar", "avx2", "avx512".
const char* isa_name(Isa isa);
// Whether this CPU (and OS) can run the kernels of `isa`. kScalar always can.
bool isa_supported(Isa isa);
// The ISA reduce_n uses: the best supported one, or the one named by STRATACL_ISA
// (scalar|avx2|avx512) if supported, else the best supported one below it. Read once.
Isa active_isa();

// The reduction, on active_isa(). op == sclAvg needs avg_divisor >= 1; other ops ignore it.
// Invalid arguments (nsrc < 1, unknown dt or op, avg_divisor < 1 for avg) assert in debug builds
// and do nothing otherwise: the C API validates them before calling here.
void reduce_n(void* dst, const void* const* srcs, int nsrc, size_t count, sclDataType_t dt,
              sclRedOp_t op, int avg_divisor);
// The same on a chosen ISA (tests, benchmarks). An unsupported `isa` runs on the best supported
// one below it, so the call never faults.
void reduce_n_isa(Isa isa, void* dst, const void* const* srcs, int nsrc, size_t count,
                  sclDataType_t dt, sclRedOp_t op, int avg_divisor);

// Weighted sum of the floating types (MoE combine): each element is
//   round_dt(((w[0] * s[0]) + w[1] * s[1]) + ... + w[nsrc-1] * s[nsrc-1])
// with every input widened exactly to float32, every product rounded to float32 before it is
// added (never fused), the sum in that order, and one rounding to dt as reduce_n rounds (float32:
// NaNs canonical). dt: float32, float16, bfloat16, fp8 e4m3/e5m2; others do nothing. Bit-identical
// across ISAs; the alignment and overlap rules of reduce_n.
void weighted_sum_n(void* dst, const void* const* srcs, const float* weights, int nsrc,
                    size_t count, sclDataType_t dt);
void weighted_sum_n_isa(Isa isa, void* dst, const void* const* srcs, const float* weights, int nsrc,
                        size_t count, sclDataType_t dt);

// buf[i] *= *scalar (a value of dt), in place: integers wrap, float64 in float64, the other
// floating types as weighted_sum_n of one input with the scalar widened to float32. The first
// step of a PreMulSum reduction (sclRedOpCreatePreMulSum), on each rank's input.
void scale(void* buf, size_t count, sclDataType_t dt, const void* scalar);

// "sum", "prod", "max", "min", "avg"; "invalid" otherwise.
const char* op_name(sclRedOp_t op);

namespace detail {
// One kernel per ISA translation unit. Arguments are already validated (dt, op in range,
// nsrc >= 1, count >= 1, avg_divisor >= 1 for avg); call through reduce_n_isa, which also makes
// sure the CPU can run it.
void reduce_n_scalar(void* dst, const void* const* srcs, int nsrc, size_t count, sclDataType_t dt,
                     sclRedOp_t op, int avg_divisor);
void reduce_n_avx2(void* dst, const void* const* srcs, int nsrc, size_t count, sclDataType_t dt,
                   sclRedOp_t op, int avg_divisor);
void reduce_n_avx512(void* dst, const void* const* srcs, int nsrc, size_t count, sclDataType_t dt,
                     sclRedOp_t op, int avg_divisor);
void weighted_sum_n_scalar(void* dst, const void* const* srcs, const float* weights, int nsrc,
                           size_t count, sclDataType_t dt);
void weighted_sum_n_avx2(void* dst, const void* const* srcs, const float* weights, int nsrc,
                         size_t count, sclDataType_t dt);
void weighted_sum_n_avx512(void* dst, const void* const* srcs, const float* weights, int nsrc,
                           size_t count, sclDataType_t dt);
}  // namespace detail

}  // namespace stratacl::reduce
