// Two-shot allreduce: reduce-scatter by direct reads, then allgather by direct reads, pipelined
// per tile. Rank r owns a byte-balanced shard; it reduces the shard tile by tile from every
// rank's input (in rank order, so every rank gets the same bits) and announces each tile. In
// between, and after, it copies the peers' finished tiles while they are still warm in the shared
// cache. Peers read our reduced shard from our output when it is heap memory, else from the
// staging area's second half. Registered (CMA) inputs are fetched a tile at a time.
//
// In place this is safe without a barrier: the region of shard p, tile t in our buffer is read
// only by rank p (to reduce that tile), and we overwrite it only after rank p announced it.
#include "coll/allreduce_twoshot.h"

#include <vector>

#include "coll/input_tiles.h"
#include "coll/round.h"
#include "core/dtype.h"
#include "exec/copy.h"
#include "reduce/reduce.h"

namespace stratacl {
namespace {

constexpr size_t kTileBytes = 64 << 10;  // fits L2 with its inputs; small enough to pipeline

struct Shard {
  Range range;
  uint32_t tiles;
  Range tile(size_t es, uint32_t t) const {
    const size_t per = kTileBytes / es;
    const size_t b = range.begin + size_t(t) * per;
    return Range{b, std::min(range.end, b + per)};
  }
};

Shard shard_of(size_t m, size_t es, int n, int r) {
  Range range = partition(m, es, n, r);
  const size_t per = kTileBytes / es;
  return Shard{range, uint32_t((range.size() + per - 1) / per)};
}

}  // namespace

Status allreduce_twoshot(CollContext& c, const Call& call, const std::vector<CallDesc>& descs,
                         const AllreduceRound& a) {
  const size_t es = dtype_size(call.dtype);
  const size_t m = a.count, bytes = a.bytes;
  const char* my_in = a.in.ptr;
  char* my_out = a.out;
  char* shard_home = a.shard_home;
  const bool out_in_heap = a.out_in_heap;
  const size_t n = size_t(c.nranks);
  std::vector<const char*> outputs(n);
  std::vector<Shard> shards(n);
  std::vector<uint32_t> tiles(n), copied(n, 0);
  for (size_t p = 0; p < n; ++p) {
    shards[p] = shard_of(m, es, c.nranks, int(p));
    tiles[p] = shards[p].tiles;
    if (p == size_t(c.rank)) continue;
    SCL_ASSIGN_OR_RETURN(const char* out, c.view_block(int(p), descs[p].out, 0, 0, bytes));
    if (!out)
      return Errorf(sclRemoteError, "%s: rank %d published an unmapped shard", c.where().c_str(),
                    int(p));
    outputs[p] = out;
  }
  // Nobody reads the peers' shards in our output during the call: past the caches, they are
  // written with non-temporal stores. Not in place: there the lines are ours, already cached.
  const bool stream = my_in != my_out && streaming_pays(call.count * es);
  Executor& ex = *c.exec;
  DrainOnExit drained(ex);  // on error returns too: the engines write our output
  auto copy_tile = [&](size_t p, uint32_t t) {
    Range tr = shards[p].tile(es, t);
    ex.copy_async(my_out + tr.begin * es, outputs[p] + tr.begin * es, tr.size() * es, stream);
  };
  // Hands every peer tile that is already announced to the engines (or copies it, without
  // them), without waiting.
  auto copy_ready = [&] {
    for (size_t k = 1; k < n; ++k) {
      const size_t p = (size_t(c.rank) + k) % n;
      while (copied[p] < tiles[p] && step_tile_ready(c, int(p), copied[p]))
        copy_tile(p, copied[p]++);
    }
  };

  // The workers reduce `parts` tiles of our shard at a time, one each, and the tiles are
  // announced together; between groups the peers' finished tiles move (on the engines, while
  // the workers reduce the next group). The whole shard decides the parts: the first group
  // wakes the helpers, which then stay awake from group to group.
  const Shard& mine = shards[size_t(c.rank)];
  const int parts = ex.parts_for(mine.range.size() * es);
  for (uint32_t first = 0; first < mine.tiles; first += uint32_t(parts)) {
    const uint32_t group = std::min(uint32_t(parts), mine.tiles - first);
    SCL_TRY(ex.split_items(int(group), group, [&](int worker, Range tiles_of_part) -> Status {
      InputTiles inputs(c, descs, 0, my_in, worker);
      for (size_t i = tiles_of_part.begin; i < tiles_of_part.end; ++i) {
        Range tr = mine.tile(es, first + uint32_t(i));
        SCL_TRY(inputs.load(tr.begin * es, tr.size() * es));
        reduce::reduce_n(shard_home + tr.begin * es, inputs.srcs(), c.nranks, tr.size(), call.dtype,
                         call.op, c.nranks);
        if (!out_in_heap)
          copy_bytes(my_out + tr.begin * es, shard_home + tr.begin * es, tr.size() * es);
      }
      return Status::Ok();
    }));
    for (uint32_t i = 0; i < group; ++i) step_tile_done(c);
    copy_ready();
  }
  // The rest of the peers' shards: wait for the next tile, then move every tile announced by
  // then in one copy, cut over the workers or handed to the engines.
  for (size_t k = 1; k < n; ++k) {
    const size_t p = (size_t(c.rank) + k) % n;
    while (copied[p] < tiles[p]) {
      SCL_TRY(step_wait_tile(c, int(p), copied[p]));
      uint32_t end = copied[p] + 1;
      while (end < tiles[p] && step_tile_ready(c, int(p), end)) ++end;
      const size_t from = shards[p].tile(es, copied[p]).begin;
      const size_t to = shards[p].tile(es, end - 1).end;
      ex.copy_async(my_out + from * es, outputs[p] + from * es, (to - from) * es, stream);
      copied[p] = end;
    }
  }
  ex.drain();
  step_tiles_finished(c, tiles);
  return Status::Ok();
}

}  // namespace stratacl
