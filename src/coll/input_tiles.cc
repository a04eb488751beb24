#include "coll/input_tiles.h"

#include <algorithm>

#include "coll/round.h"
#include "reduce/reduce.h"

namespace stratacl {
namespace {

std::vector<const void*>& thread_srcs() {
  thread_local std::vector<const void*> srcs;
  return srcs;
}

}  // namespace

InputTiles::InputTiles(const CollContext& c, const std::vector<CallDesc>& descs, size_t block,
                       const char* mine)
    : c_(c), descs_(descs), block_(block), mine_(mine), srcs_(thread_srcs()) {
  srcs_.resize(size_t(c.nranks));
  for (int p = 0; p < c.nranks; ++p)
    if (p != c.rank && descs[size_t(p)].send_va != 0) registered_ = true;
}

Status InputTiles::load(size_t offset, size_t bytes) {
  thread_local std::vector<std::vector<char>> fetched;  // per peer, reused across calls
  if (fetched.size() < srcs_.size()) fetched.resize(srcs_.size());
  for (int p = 0; p < c_.nranks; ++p) {
    const CallDesc& d = descs_[size_t(p)];
    if (p == c_.rank) {
      srcs_[size_t(p)] = mine_ + offset;
    } else if (d.send_va == 0) {
      Result<const char*> src = c_.peer_block(p, d, block_, offset + bytes);
      if (!src.ok()) return src.status();
      srcs_[size_t(p)] = *src + offset;
    } else {
      std::vector<char>& buf = fetched[size_t(p)];
      if (buf.size() < bytes) buf.resize(bytes);
      SCL_TRY(c_.read_block(p, d, block_, offset, bytes, buf.data()));
      srcs_[size_t(p)] = buf.data();
    }
  }
  return Status::Ok();
}

Status reduce_inputs(const CollContext& c, const std::vector<CallDesc>& descs, size_t block,
                     const char* mine, size_t count, const Call& call, char* dst) {
  const size_t es = elem_size(call.dtype);
  InputTiles in(c, descs, block, mine);
  const size_t per = in.any_registered() ? InputTiles::kFetchBytes / es : count;
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
