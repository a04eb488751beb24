// Picks the reduction kernel for this CPU and validates arguments. Built with default flags:
// nothing here may use ISA intrinsics, only CPU feature queries.
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cassert>

#include "core/config.h"
#include "core/dtype.h"
#include "reduce/reduce.h"

namespace stratacl::reduce {
namespace {

using KernelFn = void (*)(void*, const void* const*, int, size_t, sclDataType_t, sclRedOp_t, int);

#if defined(__x86_64__) || defined(__i386__)
// CPUID.1:ECX.F16C; read directly because clang's __builtin_cpu_supports has no "f16c".
bool has_f16c() {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}
#endif

bool cpu_supports(Isa isa) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();  // cheap, and required if we run before libgcc's constructor
  // Each TU's full -m flag set (src/CMakeLists.txt); libgcc also checks the OS saves the state.
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
  switch (isa) {
    case Isa::kScalar:
      return true;
    case Isa::kAvx2:
      return avx2;
    case Isa::kAvx512:
      return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  }
  return false;
#else
  return isa == Isa::kScalar;
#endif
}

// The best supported ISA at or below `isa`.
Isa clamp_to_supported(Isa isa) {
  int i = static_cast<int>(isa);
  while (i > 0 && !isa_supported(static_cast<Isa>(i))) --i;
  return static_cast<Isa>(i);
}

// STRATACL_ISA's choices are auto, avx512, avx2, scalar (core/config.cc): auto and avx512 ask
// for the best there is.
Isa pick_active_isa() {
  constexpr Isa kWanted[] = {Isa::kAvx512, Isa::kAvx512, Isa::kAvx2, Isa::kScalar};
  const int64_t choice = process_value(Var::kIsa);
  return clamp_to_supported(kWanted[choice >= 0 && choice < 4 ? choice : 0]);
}

KernelFn kernel_for(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return detail::reduce_n_avx512;
    case Isa::kAvx2:
      return detail::reduce_n_avx2;
    case Isa::kScalar:
      break;
  }
  return detail::reduce_n_scalar;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "invalid";
}

bool isa_supported(Isa isa) {
  static const bool supported[3] = {cpu_supports(Isa::kScalar), cpu_supports(Isa::kAvx2),
                                    cpu_supports(Isa::kAvx512)};
  const int i = static_cast<int>(isa);
  return i >= 0 && i < 3 && supported[i];
}

Isa active_isa() {
  static const Isa isa = pick_active_isa();
  return isa;
}

void reduce_n_isa(Isa isa, void* dst, const void* const* srcs, int nsrc, size_t count,
                  sclDataType_t dt, sclRedOp_t op, int avg_divisor) {
  assert(nsrc >= 1 && dtype_size(dt) != 0 && op >= 0 && op < sclNumOps);
  assert(op != sclAvg || avg_divisor >= 1);
  if (count == 0 || nsrc < 1 || dtype_size(dt) == 0 || op < 0 || op >= sclNumOps) return;
  if (op == sclAvg && avg_divisor < 1) return;  // precondition; never divide by zero
  kernel_for(clamp_to_supported(isa))(dst, srcs, nsrc, count, dt, op, avg_divisor);
}

void reduce_n(void* dst, const void* const* srcs, int nsrc, size_t count, sclDataType_t dt,
              sclRedOp_t op, int avg_divisor) {
  reduce_n_isa(active_isa(), dst, srcs, nsrc, count, dt, op, avg_divisor);
}

void weighted_sum_n_isa(Isa isa, void* dst, const void* const* srcs, const float* weights, int nsrc,
                        size_t count, sclDataType_t dt) {
  assert(nsrc >= 1 && weights);
  if (count == 0 || nsrc < 1 || !weights) return;
  switch (clamp_to_supported(isa)) {
    case Isa::kAvx512:
      return detail::weighted_sum_n_avx512(dst, srcs, weights, nsrc, count, dt);
    case Isa::kAvx2:
      return detail::weighted_sum_n_avx2(dst, srcs, weights, nsrc, count, dt);
    case Isa::kScalar:
      break;
  }
  detail::weighted_sum_n_scalar(dst, srcs, weights, nsrc, count, dt);
}

void weighted_sum_n(void* dst, const void* const* srcs, const float* weights, int nsrc,
                    size_t count, sclDataType_t dt) {
  weighted_sum_n_isa(active_isa(), dst, srcs, weights, nsrc, count, dt);
}

const char* op_name(sclRedOp_t op) {
  switch (op) {
    case sclSum:
      return "sum";
    case sclProd:
      return "prod";
    case sclMax:
      return "max";
    case sclMin:
      return "min";
    case sclAvg:
      return "avg";
    default:
      return "invalid";
  }
}

}  // namespace stratacl::reduce
