#include "backend/heap_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "stratacl/stratacl.h"

namespace stratacl_torch {
namespace {

// The span of addresses the heap has handed out. The heap is one mapping, so every address in
// the span is heap memory and none of c10's: a pointer is freed by whoever it came from, with
// nothing stored beside it. (c10 frees some tensors through raw_deleter(), without the DataPtr's
// own deleter, so one function must know both kinds.)
std::atomic<uintptr_t> g_low{UINTPTR_MAX}, g_high{0};

void note_heap_block(void* p, size_t bytes) {
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = lo + bytes;
  for (uintptr_t cur = g_low.load(); lo < cur && !g_low.compare_exchange_weak(cur, lo);) {
  }
  for (uintptr_t cur = g_high.load(); hi > cur && !g_high.compare_exchange_weak(cur, hi);) {
  }
}

void free_any(void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (a >= g_low.load() && a < g_high.load()) {
    // In a forked child StrataCL refuses, and the heap is not mapped there: nothing to free.
    sclMemFree(p);
  } else {
    c10::free_cpu(p);
  }
}

class HeapAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t bytes) const override {
    void* p = nullptr;
    if (bytes > 0 && sclMemAlloc(&p, bytes) == sclSuccess) {
      note_heap_block(p, bytes);
    } else {
      p = c10::alloc_cpu(bytes);  // what c10's own CPU allocator does
    }
    return {p, p, &free_any, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_any; }
};

HeapAllocator* instance() {
  static HeapAllocator heap;
  return &heap;
}

}  // namespace

c10::Allocator* heap_allocator() { return instance(); }

void use_heap_allocator() {
  static std::once_flag once;
  // Above the default CPU allocator's priority (0), so later registrations at 0 do not undo it.
  std::call_once(once, [] { c10::SetCPUAllocator(instance(), /*priority=*/1); });
}

}  // namespace stratacl_torch
