#include "coll/input_tiles.h"

#include <algorithm>

#include "coll/round.h"
#include "core/dtype.h"
#include "reduce/reduce.h"

namespace stratacl {

InputTiles::InputTiles(CollContext& c, const std::vector<CallDesc>& descs, size_t block,
                       const char* mine, int worker)
    : c_(c), scratch_(c.scratch[size_t(worker)]), descs_(descs), block_(block), mine_(mine) {
  scratch_.srcs.resize(size_t(c.nranks));
  scratch_.fetched.resize(size_t(c.nranks));
  for (int p = 0; p < c.nranks; ++p)
    if (p != c.rank && descs[size_t(p)].send.kind != RefKind::kMapped) fetched_ = true;
}

Status InputTiles::load(size_t offset, size_t bytes) {
  std::vector<const void*>& srcs = scratch_.srcs;
  for (int p = 0; p < c_.nranks; ++p) {
    if (p == c_.rank) {
      srcs[size_t(p)] = mine_ + offset;
      continue;
    }
    const RemoteRef& ref = descs_[size_t(p)].send;
    SCL_ASSIGN_OR_RETURN(const char* src, c_.view_block(p, ref, block_, offset, bytes));
    if (src) {
      srcs[size_t(p)] = src;
      continue;
    }
    std::vector<char>& buf = scratch_.fetched[size_t(p)];
    if (buf.size() < bytes) buf.resize(bytes);
    SCL_TRY(c_.read_block(p, ref, block_, offset, bytes, buf.data()));
    srcs[size_t(p)] = buf.data();
  }
  return Status::Ok();
}

Status reduce_inputs(CollContext& c, const std::vector<CallDesc>& descs, size_t block,
                     const char* mine, size_t count, const Call& call, char* dst) {
  const size_t es = dtype_size(call.dtype);
  // One input is its own reduction: a copy, as NCCL's single-rank calls are (every op, avg by 1
  // included), at memcpy speed and with the input's exact bits.
  if (c.nranks == 1) {
    c.copy(dst, mine, count * es);
    return Status::Ok();
  }
  // Every worker reduces its part, reading the inputs (n of them) and writing one output.
  auto part = [&](int worker, Range r) -> Status {
    InputTiles in(c, descs, block, mine, worker);
    const size_t per = in.any_fetched() ? InputTiles::kFetchBytes / es : r.size();
    size_t done = r.begin;
    do {
      const size_t m = std::min(per, r.end - done);
      SCL_TRY(in.load(done * es, m * es));
      reduce::reduce_n(dst + done * es, in.srcs(), c.nranks, m, call.dtype, call.op, c.nranks);
      done += m;
    } while (done < r.end);
    return Status::Ok();
  };
  return c.exec->split(count, es, part);
}

}  // namespace stratacl
