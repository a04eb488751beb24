#include "coll/input_tiles.h"

#include <algorithm>

#include "coll/round.h"
#include "reduce/reduce.h"

namespace stratacl {

InputTiles::InputTiles(CollContext& c, const std::vector<CallDesc>& descs, size_t block,
                       const char* mine)
    : c_(c), descs_(descs), block_(block), mine_(mine) {
  c.scratch.srcs.resize(size_t(c.nranks));
  c.scratch.fetched.resize(size_t(c.nranks));
  for (int p = 0; p < c.nranks; ++p)
    if (p != c.rank && descs[size_t(p)].send.kind != RefKind::kMapped) fetched_ = true;
}

Status InputTiles::load(size_t offset, size_t bytes) {
  std::vector<const void*>& srcs = c_.scratch.srcs;
  for (int p = 0; p < c_.nranks; ++p) {
    if (p == c_.rank) {
      srcs[size_t(p)] = mine_ + offset;
      continue;
    }
    const RemoteRef& ref = descs_[size_t(p)].send;
    Result<const char*> src = c_.view_block(p, ref, block_, offset, bytes);
    if (!src.ok()) return src.status();
    if (*src) {
      srcs[size_t(p)] = *src;
      continue;
    }
    std::vector<char>& buf = c_.scratch.fetched[size_t(p)];
    if (buf.size() < bytes) buf.resize(bytes);
    SCL_TRY(c_.read_block(p, ref, block_, offset, bytes, buf.data()));
    srcs[size_t(p)] = buf.data();
  }
  return Status::Ok();
}

Status reduce_inputs(CollContext& c, const std::vector<CallDesc>& descs, size_t block,
                     const char* mine, size_t count, const Call& call, char* dst) {
  const size_t es = elem_size(call.dtype);
  InputTiles in(c, descs, block, mine);
  const size_t per = in.any_fetched() ? InputTiles::kFetchBytes / es : count;
  size_t done = 0;
  do {
    const size_t m = std::min(per, count - done);
    SCL_TRY(in.load(done * es, m * es));
    reduce::reduce_n(dst + done * es, in.srcs(), c.nranks, m, call.dtype, call.op, c.nranks);
    done += m;
  } while (done < count);
  return Status::Ok();
}

}  // namespace stratacl
