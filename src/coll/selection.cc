#include "coll/selection.h"

namespace stratacl {
namespace {

struct Row {
  int max_ranks;
  size_t in_place_max;      // largest one-shot payload when some rank runs in place
  size_t out_of_place_max;  // ... when every rank runs out of place
};
// One-shot costs every rank n reads of the whole payload; two-shot costs a copy pass of the
// peers' freshly reduced shards. Out of place, one-shot reads inputs nobody is writing and
// measured 1.6-2.2x ahead of two-shot up to 512 KiB on 2 ranks (behind from 1 MiB). In place,
// it also reads what its peers wrote last and copies out of scratch: ahead only up to 4 KiB,
// even at 8 KiB, behind from 16 KiB (2 ranks). The crossovers move down as ranks grow.
constexpr Row kAllReduceTable[] = {
    {2, 8 << 10, 512 << 10},
    {4, 8 << 10, 128 << 10},
    {8, 4 << 10, 32 << 10},
    {1 << 30, 4 << 10, 8 << 10},
};

}  // namespace

bool use_oneshot(int nranks, size_t bytes, bool all_out_of_place, int64_t forced_max) {
  if (forced_max >= 0) return bytes <= size_t(forced_max);
  if (nranks == 1) return true;  // one input, one pass: nothing to share out
  for (const Row& r : kAllReduceTable) {
    if (nranks <= r.max_ranks)
      return bytes <= (all_out_of_place ? r.out_of_place_max : r.in_place_max);
  }
  return false;
}

}  // namespace stratacl
