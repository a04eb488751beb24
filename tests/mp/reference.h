// Verifiable inputs and expected outputs, computed without the library's kernels.
//
// Inputs. A seed names one set of inputs: element i of rank r is a pure function of
// (seed, r, i), so any rank can compute any other rank's input, and the expected output of
// every collective follows from the seed alone. Each call gets its own seed, so stale data of an
// earlier call never passes for a correct result. What the values look like depends on the
// reduction the data goes through (Kind):
//   kMove   (data movement): raw random bits of the element, NaN patterns and all; moving data
//           must preserve every bit.
//   kSum, kMinMax (sum, avg, max, min): integers take random full-width bit patterns (sums and
//           averages wrap); floating types take random values with a full random mantissa and a
//           magnitude in [2^-4, 2^4), random sign (narrow types: such a float rounded to the
//           type), so additions really round and the rank order of a floating sum matters.
//   kProd   (prod): integers random (odd on even ranks, so products do not collapse to 0 mod
//           2^bits too quickly); floating values with magnitude in [0.5, 2), random sign.
// No reducing input is NaN, infinite or zero, so max/min have no tie or NaN subtleties.
//
// Reductions (fill_reduced, reduce_arrays) follow the library's documented semantics literally,
// combining rank 0, 1, ..., n-1 in that order:
//   integers: sum and prod wrap modulo 2^bits, max/min as usual, avg = wrapped sum / n with C
//             integer division;
//   float32/float64: arithmetic in the type itself, avg = sum / (T)n; max(a, b) = b > a ? b : a;
//   float16/bfloat16/fp8: every input converted to float, reduced in float in rank order (avg
//             divides in float), rounded once to the type (src/reduce/convert.h conversions:
//             nearest even, fp16/bf16 overflow to inf, fp8 saturating).
// Comparisons are bitwise: every element must match exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "stratacl/stratacl.h"

namespace mp::ref {

enum class Kind { kMove, kSum, kProd, kMinMax };
// The input kind of a collective under `op` (-1: a non-reducing collective).
Kind kind_for(int op);

// Mixes values into a seed (a chain of splitmix64).
uint64_t make_seed(uint64_t a, uint64_t b = 0, uint64_t c = 0, uint64_t d = 0);

// dst[k] = input element (first + k) of `rank`, for k in [0, count).
void fill_input(void* dst, sclDataType_t t, Kind kind, uint64_t seed, int rank, uint64_t first,
                size_t count);

// dst[k] = reduction under `op`, over ranks 0..nranks-1 in order, of input element (first + k)
// (inputs of kind_for(op)).
void fill_reduced(void* dst, sclDataType_t t, sclRedOp_t op, uint64_t seed, int nranks,
                  uint64_t first, size_t count);

// dst[k] = reduction of srcs[0][k], srcs[1][k], ..., srcs[nsrc-1][k] in that order, for
// arbitrary (non-NaN) data.
void reduce_arrays(void* dst, const void* const* srcs, int nsrc, size_t count, sclDataType_t t,
                   sclRedOp_t op);

// Element i of an array of `t`, as its raw bits (zero-extended).
uint64_t load_bits(const void* base, sclDataType_t t, size_t i);
// "0x3c00 (1)": raw bits and the decoded value.
std::string format_bits(sclDataType_t t, uint64_t bits);

// A byte no correct output is likely to hold in every byte of an element; it varies with the
// seed so that a coincidence in one call does not repeat in the next.
unsigned char sentinel_byte(uint64_t seed);

}  // namespace mp::ref
