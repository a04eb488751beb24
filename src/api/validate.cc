#include "api/validate.h"

#include <cstring>

#include "core/dtype.h"
#include "fabric/heap.h"

namespace stratacl::api {

namespace {
template <typename Enum>
int raw_value(const Enum& e) {
  static_assert(sizeof(Enum) == sizeof(int));
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}
}  // namespace

Status check_dtype(const sclDataType_t& t) {
  const int v = raw_value(t);
  if (v < 0 || v >= sclNumTypes) {
    return Errorf(sclInvalidArgument, "datatype: %d is not a valid sclDataType_t", v);
  }
  return Status::Ok();
}

Status check_rank(const char* arg, int r, int nranks) {
  if (r < 0 || r >= nranks) {
    return Errorf(sclInvalidArgument, "%s: %d is out of range [0, %d)", arg, r, nranks);
  }
  return Status::Ok();
}

Status byte_size(const char* arg, size_t count, size_t multiplier, sclDataType_t t, size_t* out) {
  size_t bytes;
  if (__builtin_mul_overflow(count, multiplier, &bytes) ||
      __builtin_mul_overflow(bytes, dtype_size(t), &bytes) || bytes > (size_t(1) << 62)) {
    return Errorf(sclInvalidArgument, "%s: %zu elements of %s overflow the address space", arg,
                  count, dtype_name(t));
  }
  *out = bytes;
  return Status::Ok();
}

Status check_buffer(const char* arg, const void* p, size_t bytes, sclDataType_t t) {
  if (bytes == 0) return Status::Ok();
  if (!p) return Errorf(sclInvalidArgument, "%s: NULL with a non-zero count", arg);
  const size_t es = dtype_size(t);
  if (reinterpret_cast<uintptr_t>(p) % es != 0) {
    return Errorf(sclInvalidArgument, "%s: %p is not aligned to the %zu-byte %s element", arg, p,
                  es, dtype_name(t));
  }
  if (Heap* h = existing_heap(); h && h->contains(p, 1)) {
    uint64_t left = h->bytes_to_allocation_end(p);  // the user's blocks only (fabric/heap.h)
    if (left == 0) {
      return Errorf(sclInvalidArgument,
                    "%s: %p is inside the heap but in no live sclMemAlloc block", arg, p);
    }
    if (bytes > left) {
      return Errorf(sclInvalidArgument,
                    "%s: %zu bytes from %p run %llu bytes past the end of its sclMemAlloc block",
                    arg, bytes, p, (unsigned long long)(bytes - left));
    }
  }
  return Status::Ok();
}

Status check_overlap(const char* a_name, const void* a, size_t a_bytes, const char* b_name,
                     const void* b, size_t b_bytes, const void* allowed_a_at_b) {
  if (!a || !b || a_bytes == 0 || b_bytes == 0) return Status::Ok();
  auto ai = reinterpret_cast<uintptr_t>(a), bi = reinterpret_cast<uintptr_t>(b);
  const bool overlap = ai < bi + b_bytes && bi < ai + a_bytes;
  if (!overlap || a == allowed_a_at_b) return Status::Ok();
  return Errorf(sclInvalidArgument,
                "%s [%p, +%zu) and %s [%p, +%zu) overlap, and not in the in-place layout", a_name,
                a, a_bytes, b_name, b, b_bytes);
}

}  // namespace stratacl::api
