// Helpers shared by the algorithms: cutting a call into rounds that fit the staging area, and
// publishing this rank's input for its peers (fabric/staging.h decides how: in place, by address,
// or staged).
#pragma once

#include <cstddef>
#include <vector>

#include "coll/call.h"
#include "coll/context.h"
#include "coll/step.h"
#include "exec/partition.h"

namespace stratacl {

// The descriptor of a call with its signature filled in.
CallDesc make_desc(const CollContext& c, const Call& call);

// Elements per round when `staged_blocks` blocks of a round must fit the staging area; every
// rank computes the same value.
size_t round_elems(const CollContext& c, const Call& call, int staged_blocks);

// Runs fn(range) for each round. A call is cut so that `staged_blocks` blocks of one round fit
// the staging area; every rank computes the same rounds. Count 0 still runs one (empty) round,
// so that a rank passing 0 against others passing more gets a mismatch error, not a hang.
template <typename Fn>
Status for_each_round(const CollContext& c, const Call& call, int staged_blocks, Fn&& fn) {
  const size_t per_round = round_elems(c, call, staged_blocks);
  size_t lo = 0;
  do {
    const size_t hi = call.count - lo > per_round ? lo + per_round : call.count;
    SCL_TRY(fn(Range{lo, hi}));
    lo = hi;
  } while (lo < call.count);
  return Status::Ok();
}

// Publishes `nblocks` blocks of `block_bytes` of `src` (block b at src + b * src_stride) in the
// descriptor's send reference; foreign data goes to the staging area at `staging_offset`.
void publish_input(const CollContext& c, LocalBuffer src, size_t src_stride, int nblocks,
                   size_t block_bytes, size_t staging_offset, CallDesc* d);

}  // namespace stratacl
