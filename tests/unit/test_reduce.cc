// Reduction kernels (src/reduce): every ISA's reduce_n against a plain reference loop written
// here (not the library's scalar path), over all types, ops, source counts, lengths, alignments
// and in-place use; every ISA bit-identical to every other.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "reduce_testing.h"

namespace stratacl::reduce {
namespace {

using namespace test_support;

// ============================== Reduction: reference and harness ==============================

const sclRedOp_t kAllOps[] = {sclSum, sclProd, sclMax, sclMin, sclAvg};

template <class F>
F float_op(sclRedOp_t op, F a, F b) {
  switch (op) {
    case sclProd:
      return a * b;
    case sclMax:
    case sclMin: {
      // NaN skipped, -0 < +0 (reduce.h).
      if (std::isnan(b)) return a;
      if (std::isnan(a)) return b;
      if (a == b) return (std::signbit(a) == (op == sclMax)) ? b : a;
      return (op == sclMax) == (b > a) ? b : a;
    }
    default:
      return a + b;
  }
}

template <class T>
void ref_integer(unsigned char* out, const Srcs& in, size_t count, sclRedOp_t op, int div) {
  using U = std::make_unsigned_t<T>;
  for (size_t i = 0; i < count; ++i) {
    T acc = load_at<T>(in[0], i);
    for (size_t k = 1; k < in.size(); ++k) {
      const T b = load_at<T>(in[k], i);
      if (op == sclSum || op == sclAvg) acc = T(U(U(acc) + U(b)));
      if (op == sclProd) acc = T(U(U(acc) * U(b)));
      if (op == sclMax && b > acc) acc = b;
      if (op == sclMin && b < acc) acc = b;
    }
    if (op == sclAvg) {
      acc = std::is_signed_v<T> ? T(int64_t(acc) / int64_t(div)) : T(uint64_t(acc) / uint64_t(div));
    }
    store_at<T>(out, i, acc);
  }
}

template <class F>
void ref_float(unsigned char* out, const Srcs& in, size_t count, sclRedOp_t op, int div) {
  for (size_t i = 0; i < count; ++i) {
    F acc = load_at<F>(in[0], i);
    for (size_t k = 1; k < in.size(); ++k) acc = float_op(op, acc, load_at<F>(in[k], i));
    if (op == sclAvg) acc = acc / F(div);
    if (std::isnan(acc)) acc = std::numeric_limits<F>::quiet_NaN();  // 0x7FC00000 / 0x7FF8...
    store_at<F>(out, i, acc);
  }
}

template <class Bits>
void ref_narrow(const NarrowFormat& f, unsigned char* out, const Srcs& in, size_t count,
                sclRedOp_t op, int div) {
  for (size_t i = 0; i < count; ++i) {
    float acc = f.widen(load_at<Bits>(in[0], i));
    for (size_t k = 1; k < in.size(); ++k)
      acc = float_op(op, acc, f.widen(load_at<Bits>(in[k], i)));
    if (op == sclAvg) acc = acc / float(div);
    store_at<Bits>(out, i, Bits(f.narrow(acc)));
  }
}

void reference(sclDataType_t dt, unsigned char* out, const Srcs& in, size_t count, sclRedOp_t op,
               int div) {
  switch (dt) {
    case sclInt8:
      return ref_integer<int8_t>(out, in, count, op, div);
    case sclUint8:
      return ref_integer<uint8_t>(out, in, count, op, div);
    case sclInt32:
      return ref_integer<int32_t>(out, in, count, op, div);
    case sclUint32:
      return ref_integer<uint32_t>(out, in, count, op, div);
    case sclInt64:
      return ref_integer<int64_t>(out, in, count, op, div);
    case sclUint64:
      return ref_integer<uint64_t>(out, in, count, op, div);
    case sclFloat32:
      return ref_float<float>(out, in, count, op, div);
    case sclFloat64:
      return ref_float<double>(out, in, count, op, div);
    case sclFloat16:
    case sclBfloat16:
      return ref_narrow<uint16_t>(*narrow_format(dt), out, in, count, op, div);
    default:
      return ref_narrow<uint8_t>(*narrow_format(dt), out, in, count, op, div);
  }
}

std::string hex_bytes(const unsigned char* p, size_t n) {
  std::string s;
  char buf[4];
  for (size_t i = n; i-- > 0;) {  // little endian: print most significant first
    std::snprintf(buf, sizeof(buf), "%02x", p[i]);
    s += buf;
  }
  return s;
}

struct Layout {
  bool misaligned;  // shift dst and each src by 1..3 bytes off a 64-byte boundary
  int inplace;      // -1: separate dst; else dst == srcs[inplace]
};

// Buffers with guard bytes on both sides, at a chosen offset from a 64-byte boundary.
class GuardedBuffer {
 public:
  static constexpr size_t kGuard = 64;
  GuardedBuffer(size_t bytes, size_t shift) : bytes_(bytes), store_(bytes + 4 * kGuard) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(store_.data());
    start_ = size_t((kGuard - base % kGuard) % kGuard) + kGuard + shift;
  }
  unsigned char* data() { return store_.data() + start_; }
  void fill_guards(unsigned char v) {
    std::memset(store_.data(), v, start_);
    std::memset(data() + bytes_, v, store_.size() - start_ - bytes_);
  }
  bool guards_intact(unsigned char v) const {
    for (size_t i = 0; i < store_.size(); ++i) {
      if ((i < start_ || i >= start_ + bytes_) && store_[i] != v) return false;
    }
    return true;
  }

 private:
  size_t bytes_, start_;
  std::vector<unsigned char> store_;
};

// Runs one case on every supported ISA against the reference; returns false after a failure.
bool check_case(sclDataType_t dt, sclRedOp_t op, int nsrc, size_t count, Layout layout,
                std::mt19937_64& rng) {
  const size_t es = dtype_size(dt), bytes = count * es;
  const int div = op == sclAvg ? 1 + int(rng() % 9) : 0;
  std::vector<GuardedBuffer> bufs;
  std::vector<std::vector<unsigned char>> original(nsrc);
  for (int k = 0; k < nsrc; ++k) {
    bufs.emplace_back(bytes, layout.misaligned ? 1 + k % 3 : 0);
    original[k].resize(bytes);
    fill_random(dt, original[k].data(), count, rng, /*allow_nan=*/false);
  }
  GuardedBuffer out(bytes, layout.misaligned ? 3 : 0);
  Srcs orig_ptrs;
  for (auto& o : original) orig_ptrs.push_back(o.data());
  std::vector<unsigned char> want(bytes);
  reference(dt, want.data(), orig_ptrs, count, op, div);

  for (Isa isa : supported_isas()) {
    std::vector<const void*> srcs;
    for (int k = 0; k < nsrc; ++k) {
      if (bytes) std::memcpy(bufs[k].data(), original[k].data(), bytes);
      bufs[k].fill_guards(0xA5);
      srcs.push_back(bufs[k].data());
    }
    unsigned char* dst = layout.inplace >= 0 ? bufs[layout.inplace].data() : out.data();
    if (layout.inplace < 0) {
      std::memset(out.data(), 0x5A, bytes);
      out.fill_guards(0xA5);
    }
    reduce_n_isa(isa, dst, srcs.data(), nsrc, count, dt, op, div);

    auto what = [&] {
      char buf[160];
      std::snprintf(buf, sizeof(buf), "%s %s %s nsrc=%d count=%zu %s inplace=%d div=%d",
                    isa_name(isa), dtype_name(dt), op_name(op), nsrc, count,
                    layout.misaligned ? "misaligned" : "aligned", layout.inplace, div);
      return std::string(buf);
    };
    if (bytes && std::memcmp(dst, want.data(), bytes) != 0) {
      size_t i = 0;
      while (std::memcmp(dst + i * es, want.data() + i * es, es) == 0) ++i;
      std::string inputs;
      for (int k = 0; k < nsrc; ++k) {
        inputs += ' ';  // not `" " + str`: g++ 12 -O3 gives a false -Wrestrict on it
        inputs += hex_bytes(original[k].data() + i * es, es);
      }
      ADD_FAILURE() << what() << ": element " << i << " got 0x" << hex_bytes(dst + i * es, es)
                    << " want 0x" << hex_bytes(want.data() + i * es, es) << " inputs" << inputs;
      return false;
    }
    for (int k = 0; k < nsrc; ++k) {
      if (k != layout.inplace && bytes && std::memcmp(bufs[k].data(), original[k].data(), bytes)) {
        ADD_FAILURE() << what() << ": source " << k << " was modified";
        return false;
      }
      if (!bufs[k].guards_intact(0xA5)) {
        ADD_FAILURE() << what() << ": wrote outside source buffer " << k;
        return false;
      }
    }
    if (layout.inplace < 0 && !out.guards_intact(0xA5)) {
      ADD_FAILURE() << what() << ": wrote outside dst";
      return false;
    }
  }
  return true;
}

class ReduceMatrix : public ::testing::TestWithParam<sclDataType_t> {};

TEST_P(ReduceMatrix, EveryIsaMatchesReference) {
  const sclDataType_t dt = GetParam();
  std::mt19937_64 rng(1000 + unsigned(dt));
  // Around the remainder tiles (one padded tile of 64, 128, 256 or 512 bytes after 512-byte
  // tiles; 32 elements of the narrow types) and the full tiles (4 KiB).
  const size_t counts[] = {0, 1, 7, 17, 31, 33, 63, 64, 65, 127, 129, 1057, 1200, 2081, 4097};
  int variant = 0;
  for (sclRedOp_t op : kAllOps) {
    for (int nsrc : {1, 2, 3, 5, 8}) {
      for (size_t count : counts) {
        // Separate dst, element-aligned and misaligned; in place, aligned and misaligned, on a
        // rotating source (so first, middle and last sources all get their turn).
        const int k = variant++;
        const Layout layouts[] = {
            {false, -1}, {true, -1}, {false, k % nsrc}, {true, (k + 1) % nsrc}};
        for (Layout layout : layouts) {
          if (!check_case(dt, op, nsrc, count, layout, rng)) return;
        }
      }
    }
  }
  // A few long runs: many tiles, a ragged last one.
  const sclRedOp_t long_ops[] = {sclSum, kAllOps[1 + unsigned(dt) % 4]};
  for (sclRedOp_t op : long_ops) {
    if (!check_case(dt, op, 3, 100003, {true, 1}, rng)) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Reduce, ReduceMatrix, ::testing::ValuesIn(kAllDtypes),
                         [](const ::testing::TestParamInfo<sclDataType_t>& info) {
                           return std::string(dtype_name(info.param));
                         });

// Every ISA gives the same bits as every other on arbitrary data, NaN payloads included.
TEST(ReduceIsa, AllIsasBitIdenticalOnRandomData) {
  const std::vector<Isa> isas = supported_isas();
  std::mt19937_64 rng(77);
  const size_t count = 5000;
  const int nsrc = 4;
  for (sclDataType_t dt : kAllDtypes) {
    for (sclRedOp_t op : kAllOps) {
      const size_t bytes = count * dtype_size(dt);
      std::vector<std::vector<unsigned char>> in(nsrc, std::vector<unsigned char>(bytes + 3));
      std::vector<const void*> srcs;
      for (int k = 0; k < nsrc; ++k) {
        fill_random(dt, in[k].data() + k % 3, count, rng, /*allow_nan=*/true);
        srcs.push_back(in[k].data() + k % 3);
      }
      std::vector<unsigned char> first(bytes + 1), got(bytes + 1);
      reduce_n_isa(Isa::kScalar, first.data() + 1, srcs.data(), nsrc, count, dt, op, 3);
      for (Isa isa : isas) {
        reduce_n_isa(isa, got.data() + 1, srcs.data(), nsrc, count, dt, op, 3);
        ASSERT_EQ(0, std::memcmp(first.data() + 1, got.data() + 1, bytes))
            << isa_name(isa) << " " << dtype_name(dt) << " " << op_name(op);
      }
    }
  }
}

// Every pair of fp8 codes, through every op, on every ISA: the tile converters (convert_simd.h,
// written once for every vector width) must give the scalar kernel's bits for every result the
// reductions can produce, NaNs, infinities, saturation and subnormals included.
TEST(ReduceIsa, EveryPairOfFp8CodesOnEveryIsa) {
  std::vector<uint8_t> a(65536), b(65536);
  for (size_t i = 0; i < a.size(); ++i) a[i] = uint8_t(i), b[i] = uint8_t(i >> 8);
  const void* srcs[2] = {a.data(), b.data()};
  for (sclDataType_t dt : {sclFloat8e4m3, sclFloat8e5m2}) {
    for (sclRedOp_t op : kAllOps) {
      std::vector<uint8_t> want(a.size()), got(a.size());
      reduce_n_isa(Isa::kScalar, want.data(), srcs, 2, a.size(), dt, op, 2);
      for (Isa isa : supported_isas()) {
        reduce_n_isa(isa, got.data(), srcs, 2, a.size(), dt, op, 2);
        ASSERT_EQ(want, got) << isa_name(isa) << " " << dtype_name(dt) << " " << op_name(op);
      }
    }
  }
}

}  // namespace
}  // namespace stratacl::reduce
