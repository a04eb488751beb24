// Argument validation for the C entry points. Every check names the argument at fault, and a
// failed check has no side effect at all.
#pragma once

#include <cstddef>

#include "comm/communicator.h"
#include "core/status.h"

namespace stratacl::api {

// Enums arrive from C as any int: they are read through their bytes, never loaded as an enum
// value outside its range (which would be undefined behaviour in C++).
Status check_dtype(const sclDataType_t& t);
Status check_rank(const char* arg, int r, int nranks);
// count * elements-per-count * element size, failing on overflow.
Status byte_size(const char* arg, size_t count, size_t multiplier, sclDataType_t t, size_t* bytes);
// A buffer that must be readable/writable for `bytes`: non-null when bytes > 0, aligned to the
// element size, and inside its sclMemAlloc allocation when it is heap memory.
Status check_buffer(const char* arg, const void* p, size_t bytes, sclDataType_t t);
// Two buffers may be identical (in place) or disjoint; any other overlap is illegal.
Status check_overlap(const char* a_name, const void* a, size_t a_bytes, const char* b_name,
                     const void* b, size_t b_bytes, const void* allowed_a_at_b);

}  // namespace stratacl::api
