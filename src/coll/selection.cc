#include "coll/selection.h"

#include "core/config.h"

namespace stratacl {
namespace {
struct Row {
  int max_ranks;
  size_t oneshot_max_bytes;
};
// One-shot costs every rank n reads of the whole payload; two-shot costs one extra barrier and a
// copy pass. The crossover moves down as ranks grow.
constexpr Row kAllReduceTable[] = {
    {2, 64 << 10},
    {4, 32 << 10},
    {8, 16 << 10},
    {1 << 30, 8 << 10},
};
}  // namespace

size_t oneshot_max_bytes(int nranks) {
  int64_t forced = process_value(Var::kOneShotMaxBytes);
  if (forced >= 0) return size_t(forced);
  for (const Row& r : kAllReduceTable) {
    if (nranks <= r.max_ranks) return r.oneshot_max_bytes;
  }
  return 0;
}

}  // namespace stratacl
