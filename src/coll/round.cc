#include "coll/round.h"

#include "core/dtype.h"

namespace stratacl {

CallDesc make_desc(const CollContext& c, const Call& call) {
  CallDesc d;
  d.sig.coll = uint32_t(call.coll);
  d.sig.dtype = call.dtype;
  d.sig.op = signed_op(call);
  d.sig.root = call.root;
  d.sig.count = call.count;
  d.sig.round_bytes = c.round_bytes;
  d.sig.runs = uint32_t(call.runs);
  return d;
}

size_t round_elems(const CollContext& c, const Call& call, int staged_blocks) {
  const size_t es = dtype_size(call.dtype);
  size_t per_round = c.round_bytes / (size_t(staged_blocks) * es);
  const size_t unit = kPartitionAlignBytes / es;
  if (per_round > unit) per_round -= per_round % unit;
  return per_round == 0 ? 1 : per_round;
}

void publish_input(const CollContext& c, LocalBuffer src, size_t src_stride, int nblocks,
                   size_t block_bytes, size_t staging_offset, CallDesc* d) {
  d->send = c.stager.publish(Outgoing{src, src_stride, nblocks, block_bytes}, staging_offset);
}

}  // namespace stratacl
