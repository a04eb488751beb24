// sclCommShrink when the parent spans hosts: each survivor opens the child's endpoint before it
// votes, and its address travels with the vote (the heartbeat carries votes between hosts).
// Survivors spread unevenly make a child of smaller nodes (child_nodes()): 4 + 2 survivors of 2
// hosts x 4 run as nodes of 2; 3 of 2 hosts x 2 flat, each its own node, as after any single
// death where hosts hold several ranks (runs of L and L - 1).
#include <algorithm>
#include <cstring>

#include "comm/communicator.h"

namespace stratacl {

Status Communicator::prepare_child_endpoint(Communicator& child, ShrinkPart* part) {
  SCL_ASSIGN_OR_RETURN(std::unique_ptr<net::Endpoint> ep,
                       net::Endpoint::open(rail_->endpoint().spin_ns(), true));
  const std::vector<uint8_t> name = ep->name();
  if (name.empty() || name.size() > sizeof part->name)
    return Errorf(sclSystemError, "shrink: a network address of %zu bytes", name.size());
  std::memcpy(part->name, name.data(), name.size());
  part->name_bytes = uint32_t(name.size());
  child.child_ep_ = std::move(ep);
  return Status::Ok();
}

std::vector<int> Communicator::shrunk_host_members(const std::vector<int>& members) const {
  if (!rail_) return members;
  const std::vector<uint64_t> nodes = child_nodes(members);
  const size_t me = size_t(std::find(members.begin(), members.end(), rank()) - members.begin());
  std::vector<int> local;
  for (size_t i = 0; i < members.size(); ++i) {
    if (nodes[i] == nodes[me]) local.push_back(members[i]);
  }
  return local;
}

Status Communicator::join_shrunk_across_hosts(const Communicator& parent,
                                              const std::vector<int>& members,
                                              const std::vector<ShrinkRecord>& parts) {
  std::vector<std::vector<uint8_t>> names;
  for (const ShrinkRecord& r : parts)
    names.emplace_back(r.part.name, r.part.name + r.part.name_bytes);
  const int me = int(std::find(members.begin(), members.end(), parent.rank()) - members.begin());
  bool cut = false;
  const std::vector<uint64_t> nodes = parent.child_nodes(members, &cut);
  return join_network(nodes, cut, names, me);
}

}  // namespace stratacl
