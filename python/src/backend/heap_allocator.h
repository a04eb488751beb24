// Registration-on-allocation for every tensor: a c10 CPU allocator that takes memory from the
// StrataCL heap (sclMemAlloc). Installed with c10::SetCPUAllocator, it makes DDP's gradient
// buckets, a model's parameters and activations communication buffers that peers read in place.
// When the heap cannot serve a request (0 bytes, full, or in a forked child, where StrataCL
// refuses to run) c10's CPU allocation serves it, so allocation never fails because of the heap.
// Tensors made before installation keep their memory and deleters.
#pragma once

#include <c10/core/Allocator.h>

namespace stratacl_torch {

// Makes the heap the CPU allocator of every tensor created from now on. Idempotent.
void use_heap_allocator();
// The heap allocator itself (for single tensors: stratacl.torch.empty).
c10::Allocator* heap_allocator();

}  // namespace stratacl_torch
