// sclCommSplit: one step on the parent communicator. Each rank publishes its colour, key and the
// control block it allocated for the child; every rank then derives the same membership (colour
// groups ordered by key, then parent rank). Peers' heaps are already mapped: nothing is
// exchanged over sockets.
#include <algorithm>

#include "coll/round.h"
#include "coll/step.h"
#include "comm/communicator.h"
#include "fabric/heap.h"

namespace stratacl {

Result<std::unique_ptr<Communicator>> Communicator::split(int color, int key,
                                                          const sclConfig_t* config) {
  std::lock_guard<std::mutex> lock(call_mu_);
  SCL_TRY(check_usable());
  std::unique_ptr<Communicator> child(new Communicator());
  if (config) {
    Result<CommConfig> cfg = resolve_comm_config(config);
    if (!cfg.ok()) return cfg.status();
    child->cfg_ = *cfg;
  } else {
    child->cfg_ = cfg_;
  }
  SCL_TRY(child->allocate_blocks(ctx_.nranks));
  Heap* heap = existing_heap();

  const size_t n = size_t(ctx_.nranks);
  uint64_t* vec = vec_area(ctx_.me(), ctx_.nranks);
  vec[0] = uint64_t(int64_t(color));
  vec[1] = uint64_t(int64_t(key));
  vec[2] = heap->offset_of(child->cb_);
  vec[3] = heap->offset_of(child->staging_);
  vec[4] = uint64_t(child->cfg_.staging_bytes.value);
  ++ctx_.call_index;
  ctx_.call_name = "split";
  Call call;
  call.coll = Coll::kSplit;

  struct Member {
    int64_t key;
    int parent;
    bootstrap::RankInfo info;
  };
  std::vector<Member> members;
  Status s = run_step(ctx_, make_desc(ctx_, call), [&](const std::vector<CallDesc>&) -> Status {
    for (size_t p = 0; p < n; ++p) {
      const uint64_t* pv = vec_area(ctx_.peers[p].cb, ctx_.nranks);
      if (color < 0 || int64_t(pv[0]) != color) continue;
      bootstrap::RankInfo info;
      info.pid = ctx_.peers[p].pid;
      info.heap_nonce = heap_nonces_[p];
      info.cb_offset = pv[2];
      info.staging_offset = pv[3];
      info.staging_bytes = pv[4];
      members.push_back(Member{int64_t(pv[1]), int(p), info});
    }
    return Status::Ok();
  });
  SCL_TRY(finish_call(s));
  if (color < 0) return std::unique_ptr<Communicator>();

  std::stable_sort(members.begin(), members.end(), [](const Member& a, const Member& b) {
    return a.key != b.key ? a.key < b.key : a.parent < b.parent;
  });
  std::vector<bootstrap::RankInfo> table;
  std::vector<PeerHeapRef> maps;
  for (size_t i = 0; i < members.size(); ++i) {
    bootstrap::RankInfo info = members[i].info;
    info.rank = int(i);
    info.nranks = int(members.size());
    table.push_back(info);
    if (members[i].parent == ctx_.rank) {
      maps.push_back(PeerHeapRef::self(heap->base(), heap->capacity(), heap->nonce()));
      continue;
    }
    Result<PeerHeapRef> m = PeerHeapRef::share(info.heap_nonce);
    if (!m.ok()) return m.status();
    maps.push_back(std::move(*m));
  }
  SCL_TRY(child->init_from_table(table, std::move(maps)));
  return child;
}

}  // namespace stratacl
