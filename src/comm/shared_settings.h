// Settings that choose the protocol of a call: every rank must use the same, or ranks would run
// different protocols in one step. Ranks on one host compare them in their control blocks at init;
// ranks on several hosts send them with their network addresses, so every rank of every host
// compares every rank's before anything else, and all fail at once naming the variable.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace stratacl {

struct SharedSettings {
  uint32_t eager_max_bytes = 0;        // STRATACL_EAGER_MAX_BYTES
  int32_t net_doubling_min_hosts = 0;  // STRATACL_NET_DOUBLING_MIN_HOSTS
  int32_t net_tree_radix = 0;          // STRATACL_NET_TREE_RADIX
  int32_t net_pace_calls = 0;          // STRATACL_NET_PACE_CALLS
  int64_t oneshot_forced_max = -1;     // STRATACL_ONESHOT_MAX_BYTES

  // This process's values.
  static SharedSettings of_process();
};

// Ok when `theirs` (rank `them`'s) equals `mine` (rank `me`'s); else sclInvalidUsage naming the
// variable, both ranks and both values.
Status compare_settings(const SharedSettings& mine, int me, const SharedSettings& theirs, int them);

}  // namespace stratacl
