// Which libfabric provider carries the inter-host traffic. STRATACL_NET_PROVIDER names one
// ("tcp;ofi_rxm", "verbs;ofi_rxm", "efa"); by default the first reliable-datagram provider that
// fi_getinfo offers with tagged messages, leaving out shared-memory ones (ranks that share memory
// use the mapped heaps, never the network) and preferring an interface other than loopback.
#pragma once

#include <rdma/fabric.h>

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace stratacl::net {

// The fi_getinfo answer we keep: one entry, owned.
struct InfoDeleter {
  void operator()(fi_info* info) const { fi_freeinfo(info); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

// The provider this process uses, or why there is none.
Result<InfoPtr> choose_provider();

// Sets rxm's eager limit and per-connection receive buffers for tcp in the environment, each
// unless already set (provider.cc says why). choose_provider() and describe_candidates() do it
// once, before the process's first fi_getinfo, where the provider is tcp.
void set_rxm_tcp_defaults();

// Every candidate fi_getinfo offers (for scl-info): "provider  fabric  address  mr_mode".
std::vector<std::string> describe_candidates();
// One line for an entry.
std::string describe(const fi_info& info);

}  // namespace stratacl::net
