// The client side of the rendezvous: say hello to the root, receive every rank's RankInfo.
#pragma once

#include <span>
#include <vector>

#include "bootstrap/unique_id.h"
#include "bootstrap/wire.h"
#include "core/deadline.h"
#include "core/unique_fd.h"

namespace stratacl::bootstrap {

struct Joined {
  std::vector<RankInfo> table;
  UniqueFd root;  // open for the second round of a job that spans hosts
};
Result<Joined> rendezvous(const IdData& id, const RankInfo& me, const Deadline& deadline);

// The second round, when the table spans more than one host (spans_hosts): sends our blob,
// returns every rank's.
Result<std::vector<std::vector<uint8_t>>> share_blobs(const Joined& joined,
                                                      std::span<const uint8_t> mine,
                                                      const Deadline& deadline);
bool spans_hosts(const std::vector<RankInfo>& table);

// Identity of this host: ranks with the same value can share memory (same kernel, same IPC and
// network namespaces). STRATACL_HOST_ID overrides it.
uint64_t host_hash();

}  // namespace stratacl::bootstrap
