// The body of the reduction kernels, written once and compiled once per ISA: kernels_scalar.cc,
// kernels_avx2.cc and kernels_avx512.cc each include this file under their own -m flags and
// instantiate reduce_n_impl(). Include it from nowhere else.
//
// Everything here has internal linkage (anonymous namespace) on purpose. The same template
// compiled under -mavx512f and under default flags must not become one COMDAT symbol: the linker
// would keep an arbitrary copy, and the scalar path could end up executing AVX-512 code.
//
// Shape of the work: the output is produced tile by tile. For each tile every source is read
// once, in order, into a small accumulator on the stack, and only then is the tile written to
// dst. That is what makes dst == srcs[k] safe, and the working set stays in L1.
//
// Vectorisation is left to the compiler, except for the fp16/fp8 tile converters, which the AVX
// TUs write with intrinsics (GenericConverters below). To get it at plain -O2 (whose "very cheap"
// cost model refuses loops that need a scalar epilogue or a runtime alias check) every compute
// loop runs a compile-time number of iterations over __restrict tiles; the last, partial tile is
// padded with zeros. Unaligned sources are read with memcpy, which compiles to unaligned vector
// loads and is not undefined behaviour for misaligned pointers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "reduce/convert.h"
#include "stratacl/stratacl.h"

namespace stratacl::reduce::detail {
namespace {

constexpr size_t kTileBytes = 4096;      // accumulator tile of the native types
constexpr size_t kNarrowTile = 1024;     // floats per accumulator tile of the narrow types
constexpr size_t kMidTileBytes = 512;    // tiles of a call's remainder (native types); the
                                         // last few bytes take one padded tile of 64-512
constexpr size_t kSmallNarrowTile = 32;  // the same for the narrow types, in elements

template <class T>
[[gnu::always_inline]] inline T load_unaligned(const unsigned char* p) {
  T v;
  __builtin_memcpy(&v, p, sizeof(T));
  return v;
}

template <class T>
[[gnu::always_inline]] inline void store_unaligned(unsigned char* p, T v) {
  __builtin_memcpy(p, &v, sizeof(T));
}

// ---- Operators. `a` is the running value, `b` the next input. ----

template <class T>
using Unsigned = std::make_unsigned_t<T>;

struct OpSum {
  static constexpr bool kAvg = false;
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return T(Unsigned<T>(Unsigned<T>(a) + Unsigned<T>(b)));  // wraps, no signed overflow UB
    } else {
      return a + b;
    }
  }
};

// sclAvg: a sum, divided by avg_divisor once all inputs are in.
struct OpAvg : OpSum {
  static constexpr bool kAvg = true;
};

struct OpProd {
  static constexpr bool kAvg = false;
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      // uint8 promotes to int, where 255 * 255 still fits; the 32/64-bit types stay unsigned.
      static_assert(sizeof(T) != 2, "uint16 would promote to int and could overflow");
      return T(Unsigned<T>(Unsigned<T>(a) * Unsigned<T>(b)));
    } else {
      return a * b;
    }
  }
};

// Max and min over floats are NCCL's fmaxf/fminf made exact: a NaN is dropped (the result is a
// NaN only where every input is), and -0 < +0. So they associate and commute for every input,
// and any grouping or order of the ranks' inputs (hosts first, rings, rounds) gives the same bits.
// Written as selects over the whole tile, which the compiler vectorises.
template <class T>
[[gnu::always_inline]] inline T same_sign_bits(T a, T b, bool max) {
  // Equal a and b: the same bits, or +0 and -0; for max the zero with its sign bit cleared.
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  const U x = __builtin_bit_cast(U, a), y = __builtin_bit_cast(U, b);
  return __builtin_bit_cast(T, max ? U(x & y) : U(x | y));
}

struct OpMax {
  static constexpr bool kAvg = false;
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return b > a ? b : a;
    } else {
      T m = b > a ? b : a;
      m = a == b ? same_sign_bits(a, b, true) : m;
      m = b != b ? a : m;
      return a != a ? b : m;
    }
  }
};

struct OpMin {
  static constexpr bool kAvg = false;
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return b < a ? b : a;
    } else {
      T m = b < a ? b : a;
      m = a == b ? same_sign_bits(a, b, false) : m;
      m = b != b ? a : m;
      return a != a ? b : m;
    }
  }
};

// ---- Tile loops: constant trip count, restrict pointers (see the header comment). ----

template <class T, class Op, size_t N>
void combine_tile(T* __restrict acc, const unsigned char* __restrict src) {
  for (size_t i = 0; i < N; ++i) acc[i] = Op::apply(acc[i], load_unaligned<T>(src + i * sizeof(T)));
}

template <class Op, size_t N>
void combine_float_tile(float* __restrict acc, const float* __restrict src) {
  for (size_t i = 0; i < N; ++i) acc[i] = Op::apply(acc[i], src[i]);
}

template <class T, size_t N>
void divide_tile(T* __restrict acc, int divisor) {
  if constexpr (std::is_integral_v<T>) {
    // Divide in a type wide enough for any int divisor; same quotient as dividing the T value.
    using Narrow = std::conditional_t<std::is_signed_v<T>, int32_t, uint32_t>;
    using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    using W = std::conditional_t<(sizeof(T) <= 4), Narrow, Wide>;
    const W d = W(divisor);
    for (size_t i = 0; i < N; ++i) acc[i] = T(W(acc[i]) / d);
  } else {
    const T d = T(divisor);
    for (size_t i = 0; i < N; ++i) acc[i] = acc[i] / d;
  }
}

template <class T>
constexpr T canonical_nan() {
  if constexpr (sizeof(T) == 4) {
    return __builtin_bit_cast(T, uint32_t{0x7FC00000u});
  } else {
    return __builtin_bit_cast(T, uint64_t{0x7FF8000000000000ull});
  }
}

template <class T, size_t N>
void canonicalize_nan_tile(T* __restrict acc) {
  constexpr T kNan = canonical_nan<T>();
  for (size_t i = 0; i < N; ++i) acc[i] = acc[i] != acc[i] ? kNan : acc[i];
}

// ---- Native types (integers, float32, float64): accumulate in the type itself. ----

// Elements [begin, end) in tiles of kBytes; a last partial tile is zero-padded to full length.
template <class T, class Op, size_t kBytes>
void reduce_native_tiles(unsigned char* dst, const void* const* srcs, int nsrc, size_t begin,
                         size_t end, int avg_divisor) {
  constexpr size_t N = kBytes / sizeof(T);
  alignas(64) T acc[N];
  alignas(64) unsigned char pad[kBytes];
  for (size_t base = begin; base < end; base += N) {
    const size_t n = end - base < N ? end - base : N;
    const size_t off = base * sizeof(T), bytes = n * sizeof(T);
    __builtin_memcpy(acc, static_cast<const unsigned char*>(srcs[0]) + off, bytes);
    if (n < N) __builtin_memset(reinterpret_cast<unsigned char*>(acc) + bytes, 0, kBytes - bytes);
    for (int k = 1; k < nsrc; ++k) {
      const unsigned char* src = static_cast<const unsigned char*>(srcs[k]) + off;
      if (n < N) {  // last tile: pad it so the loop below can run its full constant length
        __builtin_memcpy(pad, src, bytes);
        __builtin_memset(pad + bytes, 0, kBytes - bytes);
        src = pad;
      }
      combine_tile<T, Op, N>(acc, src);
    }
    if constexpr (Op::kAvg) divide_tile<T, N>(acc, avg_divisor);
    if constexpr (std::is_floating_point_v<T>) canonicalize_nan_tile<T, N>(acc);
    __builtin_memcpy(dst + off, acc, bytes);
  }
}

// Full tiles of kTileBytes, then 512-byte tiles, then what is left in one padded tile of the
// smallest size that holds it: a 2-element call must not pad and combine a whole 4 KiB tile,
// nor a 2 KiB call run thirty-two tiny ones, nor a 256-byte call four.
template <class T, class Op>
void reduce_native(unsigned char* dst, const void* const* srcs, int nsrc, size_t count,
                   int avg_divisor) {
  constexpr size_t N = kTileBytes / sizeof(T), M = kMidTileBytes / sizeof(T);
  const size_t full = count / N * N, mid = full + (count - full) / M * M;
  reduce_native_tiles<T, Op, kTileBytes>(dst, srcs, nsrc, 0, full, avg_divisor);
  reduce_native_tiles<T, Op, kMidTileBytes>(dst, srcs, nsrc, full, mid, avg_divisor);
  const size_t rest = (count - mid) * sizeof(T);
  if (rest == 0) return;
  if (rest <= 64) return reduce_native_tiles<T, Op, 64>(dst, srcs, nsrc, mid, count, avg_divisor);
  if (rest <= 128) return reduce_native_tiles<T, Op, 128>(dst, srcs, nsrc, mid, count, avg_divisor);
  if (rest <= 256) return reduce_native_tiles<T, Op, 256>(dst, srcs, nsrc, mid, count, avg_divisor);
  reduce_native_tiles<T, Op, kMidTileBytes>(dst, srcs, nsrc, mid, count, avg_divisor);
}

// ---- Narrow float types: widen to float32, reduce, round once. ----

// Element converters of convert.h, as types (a function pointer would force an out-of-line copy).
struct Fp16Format {
  using Bits = uint16_t;
  static float widen(Bits v) { return half_to_float(v); }
  static Bits narrow(float f) { return float_to_half(f); }
};
struct Bf16Format {
  using Bits = uint16_t;
  static float widen(Bits v) { return bf16_to_float(v); }
  static Bits narrow(float f) { return float_to_bf16(f); }
};
struct E4m3Format {
  using Bits = uint8_t;
  static float widen(Bits v) { return e4m3_to_float(v); }
  static Bits narrow(float f) { return float_to_e4m3(f); }
};
struct E5m2Format {
  using Bits = uint8_t;
  static float widen(Bits v) { return e5m2_to_float(v); }
  static Bits narrow(float f) { return float_to_e5m2(f); }
};

// Tile converter built from the scalar functions; the compiler vectorises it where it can. An ISA
// TU may substitute its own converter with the same interface (see GenericConverters). Whatever
// it does, it must produce the bits of convert.h for every input: exact widening (a NaN may come
// out with any payload, narrowing canonicalises it), RNE narrowing with convert.h's overflow and
// NaN rules, independent of MXCSR.RC.
template <class Fmt>
struct GenericCvt {
  using Bits = typename Fmt::Bits;
  static constexpr size_t kBytes = sizeof(Bits);

  template <size_t N>
  static void widen(float* __restrict out, const unsigned char* __restrict in) {
    for (size_t i = 0; i < N; ++i) out[i] = Fmt::widen(load_unaligned<Bits>(in + i * kBytes));
  }
  template <size_t N>
  static void narrow(unsigned char* __restrict out, const float* __restrict in) {
    for (size_t i = 0; i < N; ++i) store_unaligned<Bits>(out + i * kBytes, Fmt::narrow(in[i]));
  }
};

// The tile converters an ISA uses for the narrow types. ISA TUs derive from this and replace
// members whose generic version vectorises poorly.
struct GenericConverters {
  using Fp16 = GenericCvt<Fp16Format>;
  using Bf16 = GenericCvt<Bf16Format>;
  using E4m3 = GenericCvt<E4m3Format>;
  using E5m2 = GenericCvt<E5m2Format>;
};

// How each widened source tile is weighted before it is combined: not at all (the reductions),
// or scaled by its weight (weighted sums, below).
struct Unweighted {
  template <size_t N>
  void apply(float*, int) const {}
};

// Elements [begin, end) in tiles of N, widened to float32; a last partial tile is zero-padded.
template <class Cvt, class Op, size_t N, class Weigh = Unweighted>
void reduce_narrow_tiles(unsigned char* dst, const void* const* srcs, int nsrc, size_t begin,
                         size_t end, int avg_divisor, Weigh weigh = {}) {
  constexpr size_t kRawBytes = N * Cvt::kBytes;
  alignas(64) float acc[N];
  alignas(64) float next[N];
  alignas(64) unsigned char raw[kRawBytes];
  for (size_t base = begin; base < end; base += N) {
    const size_t n = end - base < N ? end - base : N;
    const size_t off = base * Cvt::kBytes, bytes = n * Cvt::kBytes;
    auto source = [&](int k) {
      const unsigned char* src = static_cast<const unsigned char*>(srcs[k]) + off;
      if (n == N) return src;
      __builtin_memcpy(raw, src, bytes);
      __builtin_memset(raw + bytes, 0, kRawBytes - bytes);
      return static_cast<const unsigned char*>(raw);
    };
    Cvt::template widen<N>(acc, source(0));
    weigh.template apply<N>(acc, 0);
    for (int k = 1; k < nsrc; ++k) {
      Cvt::template widen<N>(next, source(k));
      weigh.template apply<N>(next, k);
      combine_float_tile<Op, N>(acc, next);
    }
    if constexpr (Op::kAvg) divide_tile<float, N>(acc, avg_divisor);
    if (n == N) {
      Cvt::template narrow<N>(dst + off, acc);
    } else {
      Cvt::template narrow<N>(raw, acc);
      __builtin_memcpy(dst + off, raw, bytes);
    }
  }
}

template <class Cvt, class Op>
void reduce_narrow(unsigned char* dst, const void* const* srcs, int nsrc, size_t count,
                   int avg_divisor) {
  const size_t full = count / kNarrowTile * kNarrowTile;
  reduce_narrow_tiles<Cvt, Op, kNarrowTile>(dst, srcs, nsrc, 0, full, avg_divisor);
  reduce_narrow_tiles<Cvt, Op, kSmallNarrowTile>(dst, srcs, nsrc, full, count, avg_divisor);
}

// ---- Weighted sums (MoE combine): acc = w[0] * srcs[0], then acc = acc + w[k] * srcs[k]. ----

// float32 as a "narrow" format: widening is a load, narrowing canonicalises NaNs.
struct F32Cvt {
  static constexpr size_t kBytes = 4;
  template <size_t N>
  static void widen(float* __restrict out, const unsigned char* __restrict in) {
    __builtin_memcpy(out, in, N * sizeof(float));
  }
  template <size_t N>
  static void narrow(unsigned char* __restrict out, const float* __restrict in) {
    alignas(64) float tmp[N];
    __builtin_memcpy(tmp, in, N * sizeof(float));
    canonicalize_nan_tile<float, N>(tmp);
    __builtin_memcpy(out, tmp, N * sizeof(float));
  }
};

template <size_t N>
void scale_tile(float* __restrict v, float w) {
  for (size_t i = 0; i < N; ++i) v[i] = v[i] * w;
}

// Source k scaled by weights[k]. The products are rounded to float32 before the sum: these TUs
// are built with -ffp-contract=off, so no ISA fuses them into an FMA and every ISA gives the
// scalar bits.
struct Weighted {
  const float* weights;
  template <size_t N>
  void apply(float* tile, int k) const {
    scale_tile<N>(tile, weights[k]);
  }
};

template <class Cvt>
void weighted(unsigned char* dst, const void* const* srcs, const float* weights, int nsrc,
              size_t count) {
  const size_t full = count / kNarrowTile * kNarrowTile;
  reduce_narrow_tiles<Cvt, OpSum, kNarrowTile>(dst, srcs, nsrc, 0, full, 1, Weighted{weights});
  reduce_narrow_tiles<Cvt, OpSum, kSmallNarrowTile>(dst, srcs, nsrc, full, count, 1,
                                                    Weighted{weights});
}

template <class Cvts>
void weighted_sum_impl(void* dst_v, const void* const* srcs, const float* weights, int nsrc,
                       size_t count, sclDataType_t dt) {
  auto* dst = static_cast<unsigned char*>(dst_v);
  switch (dt) {
    case sclFloat32:
      return weighted<F32Cvt>(dst, srcs, weights, nsrc, count);
    case sclFloat16:
      return weighted<typename Cvts::Fp16>(dst, srcs, weights, nsrc, count);
    case sclBfloat16:
      return weighted<typename Cvts::Bf16>(dst, srcs, weights, nsrc, count);
    case sclFloat8e4m3:
      return weighted<typename Cvts::E4m3>(dst, srcs, weights, nsrc, count);
    case sclFloat8e5m2:
      return weighted<typename Cvts::E5m2>(dst, srcs, weights, nsrc, count);
    default:
      return;
  }
}

// ---- Dispatch on op and type. ----

template <class Fn>
void with_op(sclRedOp_t op, Fn&& fn) {
  switch (op) {
    case sclSum:
      fn(OpSum{});
      break;
    case sclAvg:
      fn(OpAvg{});
      break;
    case sclProd:
      fn(OpProd{});
      break;
    case sclMax:
      fn(OpMax{});
      break;
    case sclMin:
      fn(OpMin{});
      break;
    default:
      break;
  }
}

template <class T>
void native_any_op(unsigned char* dst, const void* const* srcs, int nsrc, size_t count,
                   sclRedOp_t op, int avg_divisor) {
  with_op(op, [&](auto op_tag) {
    reduce_native<T, decltype(op_tag)>(dst, srcs, nsrc, count, avg_divisor);
  });
}

template <class Cvt>
void narrow_any_op(unsigned char* dst, const void* const* srcs, int nsrc, size_t count,
                   sclRedOp_t op, int avg_divisor) {
  with_op(op, [&](auto op_tag) {
    reduce_narrow<Cvt, decltype(op_tag)>(dst, srcs, nsrc, count, avg_divisor);
  });
}

// The whole kernel of one ISA; Cvts is GenericConverters or an ISA's refinement of it.
template <class Cvts>
void reduce_n_impl(void* dst_v, const void* const* srcs, int nsrc, size_t count, sclDataType_t dt,
                   sclRedOp_t op, int avg_divisor) {
  auto* dst = static_cast<unsigned char*>(dst_v);
  switch (dt) {
    case sclInt8:
      return native_any_op<int8_t>(dst, srcs, nsrc, count, op, avg_divisor);
    case sclUint8:
      return native_any_op<uint8_t>(dst, srcs, nsrc, count, op, avg_divisor);
    case sclInt32:
      return native_any_op<int32_t>(dst, srcs, nsrc, count, op, avg_divisor);
    case sclUint32:
      return native_any_op<uint32_t>(dst, srcs, nsrc, count, op, avg_divisor);
    case sclInt64:
      return native_any_op<int64_t>(dst, srcs, nsrc, count, op, avg_divisor);
    case sclUint64:
      return native_any_op<uint64_t>(dst, srcs, nsrc, count, op, avg_divisor);
    case sclFloat32:
      return native_any_op<float>(dst, srcs, nsrc, count, op, avg_divisor);
    case sclFloat64:
      return native_any_op<double>(dst, srcs, nsrc, count, op, avg_divisor);
    case sclFloat16:
      return narrow_any_op<typename Cvts::Fp16>(dst, srcs, nsrc, count, op, avg_divisor);
    case sclBfloat16:
      return narrow_any_op<typename Cvts::Bf16>(dst, srcs, nsrc, count, op, avg_divisor);
    case sclFloat8e4m3:
      return narrow_any_op<typename Cvts::E4m3>(dst, srcs, nsrc, count, op, avg_divisor);
    case sclFloat8e5m2:
      return narrow_any_op<typename Cvts::E5m2>(dst, srcs, nsrc, count, op, avg_divisor);
    default:
      return;
  }
}

}  // namespace
}  // namespace stratacl::reduce::detail
