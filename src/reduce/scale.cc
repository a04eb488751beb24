// In-place multiplication by a scalar: the first step of a PreMulSum reduction (reduce.h).
#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "reduce/convert.h"
#include "reduce/reduce.h"

namespace stratacl::reduce {
namespace {

// Integers wrap modulo 2^bits, as the sums before them do (T is the unsigned type of their
// width); float64 multiplies in float64.
template <typename T>
void scale_as(void* buf, size_t count, const void* scalar) {
  T s;
  std::memcpy(&s, scalar, sizeof(s));
  auto* p = static_cast<unsigned char*>(buf);
  for (size_t i = 0; i < count; ++i, p += sizeof(T)) {
    T v;
    std::memcpy(&v, p, sizeof(v));
    v = T(v * s);
    std::memcpy(p, &v, sizeof(v));
  }
}

// The scalar of a float32-computed type, widened exactly to float32.
float widen(const void* scalar, sclDataType_t dt) {
  uint32_t bits = 0;
  std::memcpy(&bits, scalar, dtype_size(dt));
  switch (dt) {
    case sclFloat16:
      return half_to_float(uint16_t(bits));
    case sclBfloat16:
      return bf16_to_float(uint16_t(bits));
    case sclFloat8e4m3:
      return e4m3_to_float(uint8_t(bits));
    case sclFloat8e5m2:
      return e5m2_to_float(uint8_t(bits));
    default:
      return convert_detail::bits_float(bits);
  }
}

}  // namespace

void scale(void* buf, size_t count, sclDataType_t dt, const void* scalar) {
  switch (dt) {
    case sclInt8:
    case sclUint8:
      return scale_as<uint8_t>(buf, count, scalar);
    case sclInt32:
    case sclUint32:
      return scale_as<uint32_t>(buf, count, scalar);
    case sclInt64:
    case sclUint64:
      return scale_as<uint64_t>(buf, count, scalar);
    case sclFloat64:
      return scale_as<double>(buf, count, scalar);
    case sclFloat32:
    case sclFloat16:
    case sclBfloat16:
    case sclFloat8e4m3:
    case sclFloat8e5m2: {
      // One product in float32, rounded once to the type: the weighted sum of one input.
      const float w = widen(scalar, dt);
      const void* src = buf;
      return weighted_sum_n(buf, &src, &w, 1, count, dt);
    }
    default:
      return;
  }
}

}  // namespace stratacl::reduce
