// Shared by the files of case `hosts` (test_hosts.cc and its parts, test_hosts_*.cc).
#pragma once

#include <string>

#include "harness.h"

namespace mp {

// The ranks on each host: stratarun --netns sets STRATACL_LOCAL_WORLD_SIZE (1 without it).
int ranks_per_host();
// What the library's messages call a host: "node" where the ctest entry says the world's hosts
// are cut into nodes (MP_HOSTS_CUT=1), otherwise "host".
const char* host_unit();
// Mismatched calls across hosts, each on a child of all ranks; the world goes on.
void mismatches_across_hosts(const Comm& w, Tally& tally);
// Those of them that the network steps of alltoall, gather and scatter meet
// (test_hosts_exchange_mismatch.cc).
void exchange_mismatches_keep_hosts_in_step(const Comm& w, Tally& tally);

// An allreduce of no elements on one rank against its peers' count fails everywhere
// (test_hosts_empty.cc).
void empty_call_against_counted_fails_everywhere(const Comm& w, Tally& tally);

// Broadcasts and reduces back to back, with a receiving host late (test_hosts_pace.cc).
void one_way_calls_keep_pace(const Comm& w, Tally& tally);

// The verdict where the hosts stay in step through a mismatched call: the first call failed on
// this rank with sclInvalidUsage (or, where `may_succeed`, succeeded: this rank's part went
// out), the second was right here, and both took seconds at most.
void failed_then_right(Tally& tally, const CallInfo& info, sclResult_t first,
                       const std::string& first_msg, bool may_succeed, sclResult_t second,
                       const std::string& second_msg, bool right, double took);

// The verdict on a mismatched call inside a host and the call after it: the first failed on this
// rank (sclInvalidUsage where it was named), within seconds with the second, and the second was
// right everywhere or failed everywhere; some rank named the mismatch. Collective on `w`.
void hosts_in_step(const Comm& w, Tally& tally, const CallInfo& info, sclResult_t first,
                   const std::string& first_msg, sclResult_t second, bool right, double took);

}  // namespace mp
