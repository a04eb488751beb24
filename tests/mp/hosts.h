// Shared by the files of case `hosts` (test_hosts.cc, test_hosts_mismatch.cc).
#pragma once

#include "harness.h"

namespace mp {

// The ranks on each host: stratarun --netns sets STRATACL_LOCAL_WORLD_SIZE (1 without it).
int ranks_per_host();
// Mismatched calls across hosts, each on a child of all ranks; the world goes on.
void mismatches_across_hosts(const Comm& w, Tally& tally);

}  // namespace mp
