// The intra-host algorithms, one per file. Each runs a whole call (all its rounds) over the
// context. All of them pull: a rank reads its peers' buffers and writes only its own.
#pragma once

#include <span>

#include "coll/call.h"
#include "coll/context.h"

namespace stratacl {

Status allreduce(CollContext& c, const Call& call);  // eager, one-shot or two-shot
Status broadcast(CollContext& c, const Call& call);
Status reduce_to_root(CollContext& c, const Call& call);
Status allgather(CollContext& c, const Call& call);
Status reduce_scatter(CollContext& c, const Call& call);
Status alltoall(CollContext& c, const Call& call);
Status alltoallv(CollContext& c, const Call& call);
// The host's half of an alltoall across dst.size() hosts (coll/alltoall_by_rail.cc): block
// h * L + (our index) of every local rank p into dst[h] + p * block, for every host h.
Status alltoall_by_rail(CollContext& c, const Call& call, std::span<char* const> dst);
Status gather(CollContext& c, const Call& call);
Status scatter(CollContext& c, const Call& call);
Status barrier(CollContext& c);
// A call refused on this rank for its arguments (Call::refused) takes its step all the same,
// publishing no buffer and a signature no call matches (kRefusedRuns): every peer's call fails
// there with sclInvalidUsage naming this rank, on every path (an eager peer reads it as a
// mismatch too), and the next call pairs as it should. Ok unless the step itself failed for
// good (the refusal was reported when the call was made).
Status run_refused(CollContext& c, const Call& call);

// Dispatches on call.coll.
Status run_collective(CollContext& c, const Call& call);

}  // namespace stratacl
