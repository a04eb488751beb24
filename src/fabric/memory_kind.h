// What kind of memory a user buffer is, decided once per call, at the C API, and carried with the
// buffer from then on: the algorithms never ask again.
#pragma once

#include <cstddef>
#include <cstdint>

namespace stratacl {

class Heap;
class RegistrationCache;

enum class MemKind : uint8_t {
  kHeap,        // from sclMemAlloc: peers reach it where it is (zero-copy)
  kRegistered,  // inside ranges registered with sclCommRegister: peers read it with CMA
  kForeign,     // anything else (malloc, a framework tensor): staged for peers
};

// A buffer of ours and its kind. Sub-ranges of a buffer have its kind.
struct LocalBuffer {
  const char* ptr = nullptr;
  MemKind kind = MemKind::kForeign;
  LocalBuffer at(size_t offset) const { return LocalBuffer{ptr + offset, kind}; }
};

// The kind of [p, p + bytes): heap memory if the data heap holds it, registered if `registered`
// covers it, foreign otherwise.
MemKind classify(const void* p, size_t bytes, const Heap* heap,
                 const RegistrationCache* registered);

}  // namespace stratacl
