// sclCommSplit: one step on the parent communicator. Each rank announces its colour, its key and
// the blocks it allocated for the child; every rank then derives the same membership (colour
// groups ordered by key, then parent rank). Peers' heaps are already mapped: nothing is
// exchanged over sockets. A rank that could not prepare its part (a bad config, no memory) still
// takes part in the step, so every rank fails at once instead of waiting for it.
#include <algorithm>

#include "coll/round.h"
#include "coll/step.h"
#include "comm/communicator.h"
#include "fabric/heap.h"

namespace stratacl {
namespace {

struct Member {
  int64_t key;
  int parent;
  bootstrap::RankInfo info;
};

}  // namespace

Status Communicator::configure_child(Communicator& child, const sclConfig_t* config) const {
  if (!config) {
    child.cfg_ = cfg_;
    return Status::Ok();
  }
  SCL_ASSIGN_OR_RETURN(child.cfg_, resolve_comm_config(config));
  return Status::Ok();
}

Result<std::shared_ptr<Communicator>> Communicator::split(uint32_t ticket, int color, int key,
                                                          const sclConfig_t* config,
                                                          const Status& refused) {
  if (!refused.ok()) color = -1, config = nullptr;
  std::shared_ptr<Communicator> child(new Communicator());
  // The child's ranks share the host with all of ours: its workers are sized for those.
  child->host_ranks_ = std::max(host_ranks_, ctx_.nranks);
  std::vector<Member> members;
  std::vector<net::SplitCard> cards;  // across hosts: every rank's colour, key and address
  Status s = in_turn(ticket, "split", [&]() -> Status {
    Status prepared = refused.ok() ? configure_child(*child, config) : refused;
    if (prepared.ok() && color >= 0) prepared = child->allocate_blocks(ctx_.nranks);
    SplitAnnouncement& a = *layout_.split.in(ctx_.me());
    a = SplitAnnouncement{color, key, 0, 0, 0, 0, int32_t(prepared.code())};
    if (child->cb_) {
      const bootstrap::RankInfo mine = child->describe(InitRequest{});
      a.cb_offset = mine.cb_offset, a.doorbell_offset = mine.doorbell_offset;
      a.staging_offset = mine.staging_offset, a.staging_bytes = mine.staging_bytes;
    }
    Call call;
    call.coll = Coll::kSplit;
    Status here =
        run_step(ctx_, make_desc(ctx_, call), [&](const std::vector<CallDesc>&) -> Status {
          // A rank that failed its own part says why, whatever its peers' failures.
          if (!prepared.ok()) return prepared;
          for (int p = 0; p < ctx_.nranks; ++p) {
            const SplitAnnouncement& a = *layout_.split.in(ctx_.cb(p));
            if (a.prepared != sclSuccess) {
              return Errorf(sclInvalidUsage, "%s: rank %d could not prepare its part: %s",
                            ctx_.where().c_str(), p, sclGetErrorString(peer_result(a.prepared)));
            }
            if (color < 0 || a.color != color) continue;
            bootstrap::RankInfo info;
            info.pid = pids_[size_t(p)];
            info.heap_nonce = heap_nonces_[size_t(p)];
            info.cb_offset = a.cb_offset;
            info.doorbell_offset = a.doorbell_offset;
            info.staging_offset = a.staging_offset;
            info.staging_bytes = a.staging_bytes;
            members.push_back(Member{a.key, p, info});
          }
          return Status::Ok();
        });
    if (!rail_) return here;
    // Across hosts every rank takes part in the exchange, even after a failure here, so that no
    // rank on another host waits for it.
    Status across = share_split(color, key, here, child.get(), &cards);
    return here.ok() ? across : here;
  });
  if (!s.ok() || color < 0) {
    if (!s.ok()) return s;
    return std::shared_ptr<Communicator>();
  }

  std::stable_sort(members.begin(), members.end(), [](const Member& a, const Member& b) {
    return a.key != b.key ? a.key < b.key : a.parent < b.parent;
  });
  std::vector<int> everywhere;  // across hosts: the child's members, in child rank order
  std::vector<uint64_t> nodes;
  bool cut = false;
  if (rail_) {
    nodes = split_nodes(cards, color, &everywhere, &cut);
    // The child's shared-memory part is its node's ranks: our host's where the child is laid
    // out host by host, fewer where it is cut into smaller nodes (ourselves alone where flat).
    const net::Topology& topo = rail_->topology();
    auto node_of = [&](int world) {
      return nodes[size_t(std::find(everywhere.begin(), everywhere.end(), world) -
                          everywhere.begin())];
    };
    const uint64_t my_node = node_of(world_rank_);
    std::erase_if(members, [&](const Member& m) {
      return node_of(topo.world_of(topo.host, m.parent)) != my_node;
    });
  }
  std::vector<bootstrap::RankInfo> table;
  std::vector<PeerHeapRef> maps;
  child->published_ = true;  // every member now knows where the child's blocks are
  for (size_t i = 0; i < members.size(); ++i) {
    bootstrap::RankInfo info = members[i].info;
    info.rank = int(i);
    info.nranks = int(members.size());
    table.push_back(info);
    Result<PeerHeapRef> m =
        members[i].parent == ctx_.rank ? PeerHeapRef::self() : PeerHeapRef::share(info.heap_nonce);
    if (!m.ok()) {
      child->abandon_init();
      return m.status();
    }
    maps.push_back(std::move(*m));
  }
  Status init = child->init_from_table(table, std::move(maps));
  if (init.ok() && rail_)
    init = child->join_across_hosts(cards, everywhere, nodes, cut, world_rank_);
  if (!init.ok()) {
    child->abandon_init();
    return init;
  }
  return child;
}

}  // namespace stratacl
