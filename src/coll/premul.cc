// The first step of a PreMulSum call: this rank's input times its own scalar, as NCCL defines it,
// in a heap block that peers read in place; the call then sums those blocks.
#include "coll/premul.h"

#include <cstring>

#include "core/dtype.h"
#include "fabric/heap.h"
#include "reduce/reduce.h"

namespace stratacl {

PremulInput::~PremulInput() {
  if (block_) (void)existing_heap()->release(block_);
}

Status PremulInput::prepare(const Call& call, int nranks, Call* scaled) {
  *scaled = call;
  scaled->premul = PreMul{};
  scaled->premultiplied = call.premul.on;
  if (!call.premul.on) return Status::Ok();
  const size_t elems = call.coll == Coll::kReduceScatter ? call.count * size_t(nranks) : call.count;
  const size_t bytes = elems * dtype_size(call.dtype);
  if (bytes == 0) return Status::Ok();
  uint64_t scalar = call.premul.value;  // read before the call: it may alias what the call writes
  if (call.premul.at) std::memcpy(&scalar, call.premul.at, dtype_size(call.dtype));
  SCL_ASSIGN_OR_RETURN(Heap * heap, Heap::instance());
  SCL_ASSIGN_OR_RETURN(block_, heap->allocate(bytes));
  std::memcpy(block_, call.send.ptr, bytes);
  reduce::scale(block_, elems, call.dtype, &scalar);
  scaled->send = LocalBuffer{static_cast<const char*>(block_), MemKind::kHeap};
  return Status::Ok();
}

}  // namespace stratacl
