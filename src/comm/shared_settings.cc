#include "comm/shared_settings.h"

#include "core/config.h"

namespace stratacl {

SharedSettings SharedSettings::of_process() {
  SharedSettings s;
  s.eager_max_bytes = uint32_t(process_value(Var::kEagerMaxBytes));
  s.oneshot_forced_max = process_value(Var::kOneShotMaxBytes);
  s.net_doubling_min_hosts = int32_t(process_value(Var::kNetDoublingMinHosts));
  s.net_tree_radix = int32_t(process_value(Var::kNetTreeRadix));
  s.net_pace_calls = int32_t(process_value(Var::kNetPaceCalls));
  return s;
}

Status compare_settings(const SharedSettings& mine, int me, const SharedSettings& theirs,
                        int them) {
  if (theirs.eager_max_bytes != mine.eager_max_bytes) {
    return Errorf(sclInvalidUsage,
                  "STRATACL_EAGER_MAX_BYTES is %u on rank %d but %u on rank %d; every rank must "
                  "use the same value",
                  mine.eager_max_bytes, me, theirs.eager_max_bytes, them);
  }
  if (theirs.oneshot_forced_max != mine.oneshot_forced_max) {
    return Errorf(sclInvalidUsage,
                  "STRATACL_ONESHOT_MAX_BYTES is %lld on rank %d but %lld on rank %d (-1: unset); "
                  "every rank must use the same value",
                  (long long)mine.oneshot_forced_max, me, (long long)theirs.oneshot_forced_max,
                  them);
  }
  // The rails' choices of algorithm.
  const struct {
    const char* name;
    int32_t mine, theirs;
  } rail[] = {
      {"STRATACL_NET_DOUBLING_MIN_HOSTS", mine.net_doubling_min_hosts,
       theirs.net_doubling_min_hosts},
      {"STRATACL_NET_TREE_RADIX", mine.net_tree_radix, theirs.net_tree_radix},
      {"STRATACL_NET_PACE_CALLS", mine.net_pace_calls, theirs.net_pace_calls},
  };
  for (const auto& h : rail) {
    if (h.mine != h.theirs) {
      return Errorf(sclInvalidUsage,
                    "%s is %d on rank %d but %d on rank %d; every rank must use the same value",
                    h.name, h.mine, me, h.theirs, them);
    }
  }
  return Status::Ok();
}

}  // namespace stratacl
