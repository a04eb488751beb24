// The client side of the rendezvous: say hello to the root, receive every rank's RankInfo.
#pragma once

#include <vector>

#include "bootstrap/unique_id.h"
#include "bootstrap/wire.h"
#include "core/deadline.h"

namespace stratacl::bootstrap {

Result<std::vector<RankInfo>> rendezvous(const IdData& id, const RankInfo& me,
                                         const Deadline& deadline);

// Identity of this host: ranks with the same value can share memory. STRATACL_HOST_ID
// overrides it (to test multi-host grouping on one machine).
uint64_t host_hash();

}  // namespace stratacl::bootstrap
