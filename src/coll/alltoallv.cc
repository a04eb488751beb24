// AlltoAllv: each rank publishes what it sends each peer (count and displacement) in its control
// block; the receiver reads them, checks them against its own receive counts (a mismatch is an
// error on every rank), and copies each block straight from the sender's buffer. The counts are
// uneven, so no common rounds exist: a foreign send buffer is staged whole, into a block that the
// communicator keeps for its alltoallv calls.
#include "coll/alltoallv.h"

#include <algorithm>
#include <string>

#include "coll/algorithms.h"
#include "coll/round.h"
#include "core/dtype.h"
#include "exec/copy.h"

namespace stratacl {

Status alltoallv(CollContext& c, const Call& call) {
  const size_t es = dtype_size(call.dtype);
  const size_t n = size_t(c.nranks);
  AlltoallvBlock* mine = c.regions.alltoallv.in(c.me());
  size_t extent = 0;
  for (size_t p = 0; p < n; ++p) {
    mine[p] = AlltoallvBlock{call.sendcounts[p], call.sdispls[p]};
    if (call.sendcounts[p] > 0)
      extent = std::max(extent, (call.sdispls[p] + call.sendcounts[p]) * es);
  }
  CallDesc d = make_desc(c, call);
  SCL_ASSIGN_OR_RETURN(
      d.send, c.stager.publish_own(Outgoing{call.send, 0, 1, extent}, &c.alltoallv_staged));
  d.send.stride = es;  // block b = element displacement b

  Status s = run_step(c, d, [&](const std::vector<CallDesc>& descs) -> Status {
    Status usage;
    for (size_t k = 0; k < n; ++k) {
      const size_t p = (size_t(c.rank) + k) % n;
      const AlltoallvBlock theirs = c.regions.alltoallv.in(c.cb(int(p)))[c.rank];
      if (theirs.count != call.recvcounts[p]) {
        if (usage.ok()) {
          usage = Errorf(sclInvalidUsage,
                         "%s: mismatched counts: rank %zu sends %llu elements to rank %d, which "
                         "expects %zu",
                         c.where().c_str(), p, (unsigned long long)theirs.count, c.rank,
                         call.recvcounts[p]);
        }
        continue;
      }
      if (theirs.count == 0) continue;
      char* out = call.recv + call.rdispls[p] * es;
      if (p == size_t(c.rank)) {
        c.copy(out, call.send.ptr + theirs.displ * es, theirs.count * es);
        continue;
      }
      uint64_t bytes;
      if (__builtin_mul_overflow(theirs.count, uint64_t(es), &bytes)) {
        return Errorf(sclRemoteError, "%s: rank %zu published an absurd count", c.where().c_str(),
                      p);
      }
      SCL_TRY(c.read_block(int(p), descs[p].send, theirs.displ, 0, bytes, out));
    }
    return usage;
  });
  // A peer may still be copying out of the staged block when the call failed fatally.
  if (is_fatal(s)) c.quarantine->keep(std::move(c.alltoallv_staged));
  return s;
}

}  // namespace stratacl
