#include "coll/round.h"

#include "exec/copy.h"
#include "reduce/reduce.h"

namespace stratacl {

size_t elem_size(sclDataType_t t) { return reduce::dtype_size(t); }

CallDesc make_desc(const CollContext& c, const Call& call) {
  CallDesc d;
  d.sig.coll = uint32_t(call.coll);
  d.sig.dtype = call.dtype;
  d.sig.op = call.op;
  d.sig.root = call.root;
  d.sig.count = call.count;
  d.sig.round_bytes = c.round_bytes;
  return d;
}

size_t round_elems(const CollContext& c, const Call& call, int staged_blocks) {
  const size_t es = elem_size(call.dtype);
  size_t per_round = c.round_bytes / (size_t(staged_blocks) * es);
  const size_t unit = kPartitionAlignBytes / es;
  if (per_round > unit) per_round -= per_round % unit;
  return per_round == 0 ? 1 : per_round;
}

bool in_heap(const CollContext& c, const void* p, size_t bytes) {
  auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(c.my_base());
  const uint64_t cap = c.peers[size_t(c.rank)].bytes;
  return a >= b && a - b <= cap && bytes <= cap - (a - b);
}

void publish_input(const CollContext& c, const char* src, size_t src_stride, int nblocks,
                   size_t block_bytes, size_t staging_offset, CallDesc* d) {
  const size_t extent = nblocks > 0 ? (size_t(nblocks) - 1) * src_stride + block_bytes : 0;
  if (in_heap(c, src, extent)) {
    d->send_ref = c.ref_of(src);
    d->send_stride = src_stride;
    return;
  }
  if (c.registrations && c.registrations->covers(src, extent) && c.cma_usable()) {
    d->send_va = reinterpret_cast<uintptr_t>(src);
    d->send_stride = src_stride;
    return;
  }
  char* dst = c.staging + staging_offset;
  for (int b = 0; b < nblocks; ++b)
    copy_bytes(dst + size_t(b) * block_bytes, src + size_t(b) * src_stride, block_bytes);
  d->send_ref = c.ref_of(dst);
  d->send_stride = block_bytes;
}

}  // namespace stratacl
