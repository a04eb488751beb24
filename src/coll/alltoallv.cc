// AlltoAllv: each rank publishes its send counts and displacements in its control block; the
// receiver reads them, checks them against its own receive counts (a mismatch is an error on
// every rank), and copies each block straight from the sender's buffer. Foreign send buffers are
// staged whole into a temporary heap block (the counts are uneven, so no common rounds exist).
#include <cstring>
#include <string>

#include "coll/algorithms.h"
#include "coll/round.h"
#include "exec/copy.h"
#include "fabric/heap.h"

namespace stratacl {
namespace {

// Owns a temporary heap block for the length of the call. Not copyable: a copy would free the
// block twice (once while peers still read it).
struct TempBlock {
  Heap* heap = nullptr;
  void* ptr = nullptr;
  TempBlock() = default;
  TempBlock(const TempBlock&) = delete;
  TempBlock& operator=(const TempBlock&) = delete;
  ~TempBlock() {
    if (ptr) (void)heap->release(ptr);
  }
};

}  // namespace

Status alltoallv(CollContext& c, const Call& call) {
  const size_t es = elem_size(call.dtype);
  const size_t n = size_t(c.nranks);
  uint64_t* vec = vec_area(c.me(), c.nranks);
  size_t extent = 0;
  for (size_t p = 0; p < n; ++p) {
    vec[p] = call.sendcounts[p];
    vec[n + p] = call.sdispls[p];
    extent = std::max(extent, (call.sdispls[p] + call.sendcounts[p]) * es);
  }
  CallDesc d = make_desc(c, call);
  TempBlock temp;
  const char* published = call.send;
  if (extent > 0 && !in_heap(c, call.send, extent)) {
    Result<Heap*> heap = Heap::instance();
    if (!heap.ok()) return heap.status();
    Result<void*> block = (*heap)->allocate(extent);
    if (!block.ok()) return block.status();
    temp.heap = *heap;
    temp.ptr = *block;
    for (size_t p = 0; p < n; ++p) {
      copy_bytes(static_cast<char*>(*block) + call.sdispls[p] * es,
                 call.send + call.sdispls[p] * es, call.sendcounts[p] * es);
    }
    published = static_cast<const char*>(*block);
  }
  d.send_ref = extent > 0 ? c.ref_of(published) : kNoRef;
  d.send_stride = es;  // block b = element displacement b

  return run_step(c, d, [&](const std::vector<CallDesc>& descs) -> Status {
    Status usage;
    for (size_t k = 0; k < n; ++k) {
      const size_t p = (size_t(c.rank) + k) % n;
      const uint64_t* pv = vec_area(c.peers[p].cb, c.nranks);
      const uint64_t count = pv[size_t(c.rank)], displ = pv[n + size_t(c.rank)];
      if (count != call.recvcounts[p]) {
        if (usage.ok()) {
          usage =
              Errorf(sclInvalidUsage,
                     "%s: mismatched counts: rank %zu sends %llu elements to rank %d, which "
                     "expects %zu",
                     c.where().c_str(), p, (unsigned long long)count, c.rank, call.recvcounts[p]);
        }
        continue;
      }
      if (count == 0) continue;
      char* out = call.recv + call.rdispls[p] * es;
      if (p == size_t(c.rank)) {
        copy_bytes(out, call.send + displ * es, count * es);
        continue;
      }
      uint64_t bytes;
      if (__builtin_mul_overflow(count, uint64_t(es), &bytes)) {
        return Errorf(sclRemoteError, "%s: rank %zu published an absurd count", c.where().c_str(),
                      p);
      }
      SCL_TRY(c.read_block(int(p), descs[p], displ, 0, bytes, out));
    }
    return usage;
  });
}

}  // namespace stratacl
