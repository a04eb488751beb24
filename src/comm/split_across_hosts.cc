// sclCommSplit when the parent spans hosts. The split step on the parent's host (comm_split.cc)
// gives each rank its colour's members on its own host; a card from every rank, allgathered over
// the parent's network, gives the rest: the colour's members everywhere, ordered by key and then
// parent rank, and their new endpoints' addresses. A child whose members share one host needs
// no network; one that spans hosts gets its own endpoint and rail, with the parent's host (or
// node) numbering where its ranks are laid out host by host, else on smaller nodes within the
// parent's (child_nodes(), net/topology.h).
#include <algorithm>
#include <cstring>

#include "comm/communicator.h"
#include "core/log.h"
#include "hier/hierarchical.h"

namespace stratacl {

Status Communicator::share_split(int color, int key, const Status& here, Communicator* child,
                                 std::vector<net::SplitCard>* cards) {
  net::SplitCard mine;
  mine.color = color, mine.key = key;
  Status opened;  // our own child endpoint, when we join a child
  if (here.ok() && color >= 0) {
    Result<std::unique_ptr<net::Endpoint>> ep =
        net::Endpoint::open(rail_->endpoint().spin_ns(), true);
    const std::vector<uint8_t> name = ep.ok() ? (*ep)->name() : std::vector<uint8_t>{};
    if (!ep.ok()) {
      opened = ep.status();
    } else if (name.empty() || name.size() > sizeof mine.name) {
      opened = Errorf(sclSystemError, "split: a network address of %zu bytes", name.size());
    } else {
      std::memcpy(mine.name, name.data(), name.size());
      mine.name_bytes = uint32_t(name.size());
      child->child_ep_ = std::move(*ep);
    }
  }
  mine.result = int32_t(here.ok() ? opened.code() : here.code());
  cards->assign(size_t(world_nranks_), net::SplitCard{});
  hier::Context hc = across_hosts();
  hc.rail.begin(uint32_t(Coll::kSplit), 0);
  SCL_TRY(hier::allgather_bytes(hc, &mine, sizeof mine, cards->data()));
  // A rank that failed its own part says why, whatever its peers' failures (a failure on our
  // host, `here`, is the caller's to return).
  if (!opened.ok()) return opened;
  for (int w = 0; w < world_nranks_; ++w) {
    const net::SplitCard& c = (*cards)[size_t(w)];
    if (c.result != sclSuccess) {
      return Errorf(
          sclInvalidUsage, "split: rank %d could not prepare its part: %s", w,
          sclGetErrorString(c.result > 0 && c.result < sclNumResults ? sclResult_t(c.result)
                                                                     : sclRemoteError));
    }
  }
  return opened;
}

std::vector<uint64_t> Communicator::split_nodes(const std::vector<net::SplitCard>& cards, int color,
                                                std::vector<int>* members, bool* cut) const {
  members->clear();
  for (int w = 0; w < int(cards.size()); ++w) {
    if (cards[size_t(w)].color == color) members->push_back(w);
  }
  std::stable_sort(members->begin(), members->end(),
                   [&](int a, int b) { return cards[size_t(a)].key < cards[size_t(b)].key; });
  return child_nodes(*members, cut);
}

std::vector<uint64_t> Communicator::child_nodes(const std::vector<int>& members, bool* cut) const {
  std::vector<uint64_t> parents;
  for (int w : members) parents.push_back(uint64_t(rail_->topology().host_of(w)));
  std::vector<uint64_t> nodes = net::Topology::nodes(parents);
  if (cut) *cut = rail_->topology().cut || nodes != parents;
  return nodes;
}

Status Communicator::join_across_hosts(const std::vector<net::SplitCard>& cards,
                                       const std::vector<int>& members,
                                       const std::vector<uint64_t>& nodes, bool cut,
                                       int parent_rank) {
  std::vector<std::vector<uint8_t>> names;
  int me = -1;
  for (size_t i = 0; i < members.size(); ++i) {
    const net::SplitCard& c = cards[size_t(members[i])];
    names.emplace_back(c.name, c.name + std::min<size_t>(c.name_bytes, sizeof c.name));
    if (members[i] == parent_rank) me = int(i);
  }
  return join_network(nodes, cut, names, me);
}

Status Communicator::join_network(const std::vector<uint64_t>& nodes, bool cut,
                                  const std::vector<std::vector<uint8_t>>& names, int me) {
  std::unique_ptr<net::Endpoint> ep = std::move(child_ep_);
  SCL_ASSIGN_OR_RETURN(net::Topology topo, net::Topology::of(nodes, me));
  topo.cut = cut;
  if (topo.hosts == 1) return Status::Ok();  // every member on our node: no network needed
  log_info("rank %d of a child of %zu ranks: node %d of %d, local rank %d of %d", me, names.size(),
           topo.host, topo.hosts, topo.local, topo.per_host);
  SCL_TRY(ep->connect(names, me));
  world_rank_ = me;
  world_nranks_ = int(names.size());
  set_rail(std::move(ep), topo);
  return start_heartbeat();
}

}  // namespace stratacl
