#include "backend/heap_allocator.h"

#include <c10/core/CPUAllocator.h>

#include <mutex>

#include "stratacl/stratacl.h"

namespace stratacl_torch {
namespace {

void free_heap(void* p) { sclMemFree(p); }

class HeapAllocator final : public c10::Allocator {
 public:
  explicit HeapAllocator(c10::Allocator* fallback) : fallback_(fallback) {}

  c10::DataPtr allocate(size_t bytes) const override {
    void* p = nullptr;
    if (bytes > 0 && sclMemAlloc(&p, bytes) == sclSuccess)
      return {p, p, &free_heap, c10::Device(c10::DeviceType::CPU)};
    return fallback_->allocate(bytes);
  }
  // Tensors carry their own deleter (heap or fallback), so there is no single raw deleter.
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

 private:
  c10::Allocator* fallback_;
};

HeapAllocator* instance() {
  static HeapAllocator* heap = new HeapAllocator(c10::GetCPUAllocator());  // lives forever
  return heap;
}

}  // namespace

c10::Allocator* heap_allocator() { return instance(); }

void use_heap_allocator() {
  static std::once_flag once;
  // Above the default CPU allocator's priority (0), so later registrations at 0 do not undo it.
  std::call_once(once, [] { c10::SetCPUAllocator(instance(), /*priority=*/1); });
}

}  // namespace stratacl_torch
