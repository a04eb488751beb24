#include "fabric/memory_kind.h"

#include "fabric/heap.h"
#include "fabric/registration_cache.h"

namespace stratacl {

MemKind classify(const void* p, size_t bytes, const Heap* heap,
                 const RegistrationCache* registered) {
  if (heap && heap->contains(p, bytes)) return MemKind::kHeap;
  if (registered && bytes > 0 && registered->covers(p, bytes)) return MemKind::kRegistered;
  return MemKind::kForeign;
}

}  // namespace stratacl
