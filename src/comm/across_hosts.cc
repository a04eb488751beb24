// A communicator across hosts: its network endpoint and rail at init, and its heartbeat (the
// liveness of the ranks on other hosts, net/heartbeat.h), started at init and at split.
#include <algorithm>
#include <cstring>
#include <random>

#include "comm/communicator.h"
#include "core/config.h"
#include "core/log.h"
#include "hier/hierarchical.h"

namespace stratacl {

using bootstrap::RankInfo;

namespace {

// A fixed-size card per rank, allgathered over the communicator's own network.
struct Card {
  int32_t result = 0;  // sclSuccess, or why this rank has no heartbeat endpoint
  uint32_t bytes = 0;
  uint64_t nonce = 0;  // rank 0's is the communicator's
  // STRATACL_NET_ONE_SIDED_MIN_BYTES, which must agree, and whether the endpoint can write.
  int64_t one_sided_min = -1;
  uint32_t writes = 0;
  uint32_t unused = 0;  // no padding: every byte sent is set
  uint8_t name[112] = {};
};

// One-sided transfers need every rank of the communicator to choose alike, so the setting must
// agree and every endpoint must be able to write; otherwise the ranks would wait on each other's
// clear-to-sends and messages. Disagreement fails the init or split, naming the rank.
Status agree_one_sided(const std::vector<Card>& cards, int self, net::Rail& rail) {
  bool all_write = true;
  for (size_t w = 0; w < cards.size(); ++w) {
    if (cards[w].one_sided_min != cards[size_t(self)].one_sided_min) {
      return Errorf(sclInvalidUsage,
                    "%s has STRATACL_NET_ONE_SIDED_MIN_BYTES=%lld where rank %d has %lld: it "
                    "must be the same on every rank",
                    rail.who(int(w)).c_str(), static_cast<long long>(cards[w].one_sided_min), self,
                    static_cast<long long>(cards[size_t(self)].one_sided_min));
    }
    all_write = all_write && cards[w].writes;
  }
  rail.set_one_sided_min(all_write ? cards[size_t(self)].one_sided_min : -1);
  return Status::Ok();
}

// The heartbeat's nonce (net/heartbeat.h): the first of these candidates, made from rank 0's
// random seed, that no rank's hub has taken. Communicators of one process share its hub, so
// two whose ranks share processes must not share a nonce too; checking each member's own hub
// is enough, as a clash needs a member in both. A random nonce of the heartbeat's 24 bits would
// clash with one of K communicators alive together with odds K / 2^24.
constexpr int kNonceCandidates = 8;

uint64_t nonce_candidate(uint64_t seed, int i) {
  uint64_t z = seed + uint64_t(i) * 0x9e3779b97f4a7c15ull;  // splitmix64's steps
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

Status Communicator::init_across_hosts(const bootstrap::Joined& joined, int rank,
                                       HeapExchange& exch, const Deadline& deadline) {
  const std::vector<RankInfo>& table = joined.table;
  std::vector<uint64_t> hosts;
  for (const RankInfo& r : table) hosts.push_back(r.host_hash);
  const std::vector<uint64_t> nodes = net::Topology::nodes(hosts);
  Result<net::Topology> topo = net::Topology::of(nodes, rank);
  if (topo.ok()) topo->cut = nodes != hosts;
  // The workers are sized for every rank of our host, whether or not they share our memory.
  host_ranks_ = int(std::count(hosts.begin(), hosts.end(), hosts[size_t(rank)]));
  // Every rank sends its settings and an address, even one that cannot go on, so that no peer
  // waits for it; every rank then compares every rank's settings, so a setting one rank differs
  // in fails every rank at once, naming it (the hosts' own checks would fail one host only, and
  // leave the others waiting for it).
  Result<std::unique_ptr<net::Endpoint>> ep =
      topo.ok() ? net::Endpoint::open(net::kDataSpinNs, true) : topo.status();
  const SharedSettings settings = SharedSettings::of_process();
  std::vector<uint8_t> blob(sizeof settings);
  std::memcpy(blob.data(), &settings, sizeof settings);
  if (ep.ok()) {
    const std::vector<uint8_t> name = (*ep)->name();
    blob.insert(blob.end(), name.begin(), name.end());
  }
  SCL_ASSIGN_OR_RETURN(std::vector<std::vector<uint8_t>> blobs,
                       bootstrap::share_blobs(joined, blob, deadline));
  std::vector<std::vector<uint8_t>> names;
  for (size_t r = 0; r < blobs.size(); ++r) {
    const std::vector<uint8_t>& b = blobs[r];
    if (b.size() < sizeof settings) {
      return Errorf(sclRemoteError, "rank %zu sent %zu bytes for its settings and address", r,
                    b.size());
    }
    SharedSettings theirs;
    std::memcpy(&theirs, b.data(), sizeof theirs);
    SCL_TRY(compare_settings(settings, rank, theirs, int(r)));
    names.emplace_back(b.begin() + sizeof settings, b.end());
  }
  if (!topo.ok()) return topo.status();
  if (!ep.ok()) return ep.status();
  for (size_t r = 0; r < names.size(); ++r) {
    if (names[r].empty()) {
      return Errorf(sclRemoteError, "rank %zu could not open its network endpoint", r);
    }
  }
  SCL_TRY((*ep)->connect(names, rank));
  if (nodes != hosts) {
    log_info("rank %d: %s; it runs on network nodes of %d ranks", rank,
             net::Topology::of(hosts, rank).status().message().c_str(), topo->per_host);
  }
  log_info("rank %d: node %d of %d, local rank %d of %d; network: %s", rank, topo->host,
           topo->hosts, topo->local, topo->per_host, net::describe((*ep)->info()).c_str());

  std::vector<int> local;
  for (int l = 0; l < topo->per_host; ++l) local.push_back(topo->world_of(topo->host, l));
  SCL_ASSIGN_OR_RETURN(std::vector<PeerHeapRef> maps, exch.exchange(table, local, rank, deadline));
  std::vector<RankInfo> host_table;
  std::vector<PeerHeapRef> host_maps;
  for (int w : local) {
    host_table.push_back(table[size_t(w)]);
    host_maps.push_back(std::move(maps[size_t(w)]));
  }
  SCL_TRY(init_from_table(host_table, std::move(host_maps)));
  world_rank_ = rank;
  world_nranks_ = int(table.size());
  set_rail(std::move(*ep), *topo);
  return start_heartbeat();
}

void Communicator::set_rail(std::unique_ptr<net::Endpoint> ep, const net::Topology& topo) {
  rail_ = std::make_unique<net::Rail>(
      std::move(ep), topo, [this](int waiting_on) { return usable(waiting_on); },
      [](uint32_t kind) { return coll_name(Coll(kind)); });
  // Every rank's value was compared at init (SharedSettings), so the rails agree.
  rail_->set_doubling_min_hosts(int(process_value(Var::kNetDoublingMinHosts)));
  rail_->set_small_tree_radix(int(process_value(Var::kNetTreeRadix)));
  rail_->set_pace_calls(uint64_t(process_value(Var::kNetPaceCalls)));
}

Status Communicator::start_heartbeat() {
  Result<std::unique_ptr<net::Heartbeat>> hb = net::Heartbeat::open();
  Card mine;
  const std::vector<uint8_t> name = hb.ok() ? (*hb)->name() : std::vector<uint8_t>{};
  Status opened = hb.ok() ? Status::Ok() : hb.status();
  if (opened.ok() && (name.empty() || name.size() > sizeof mine.name)) {
    opened = Errorf(sclSystemError, "heartbeat: a network address of %zu bytes", name.size());
  }
  if (opened.ok()) {
    std::memcpy(mine.name, name.data(), name.size());
    mine.bytes = uint32_t(name.size());
  }
  mine.result = int32_t(opened.code());
  mine.nonce = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  mine.one_sided_min = process_value(Var::kNetOneSidedMinBytes);
  mine.writes = rail_->endpoint().writes() ? 1 : 0;
  std::vector<Card> cards(static_cast<size_t>(world_nranks_));
  hier::Context hc = across_hosts();
  hc.rail.begin(uint32_t(Coll::kSplit), 1);  // the library's own exchange, at init or split
  SCL_TRY(hier::allgather_bytes(hc, &mine, sizeof mine, cards.data()));
  // Every rank sees every card, so every rank returns here alike, before the next exchange.
  SCL_TRY(opened);
  std::vector<std::vector<uint8_t>> names;
  std::vector<int> watched;
  const net::Topology& topo = rail_->topology();
  for (int w = 0; w < world_nranks_; ++w) {
    const Card& c = cards[size_t(w)];
    if (c.result != sclSuccess || c.bytes == 0 || c.bytes > sizeof c.name) {
      return Errorf(sclRemoteError, "rank %d could not open its heartbeat endpoint", w);
    }
    names.emplace_back(c.name, c.name + c.bytes);
    if (topo.host_of(w) != topo.host) watched.push_back(w);
  }
  SCL_TRY(agree_one_sided(cards, world_rank_, *rail_));
  uint64_t taken = 0;  // bit i: candidate i is taken on our hub
  for (int i = 0; i < kNonceCandidates; ++i) {
    if ((*hb)->nonce_taken(nonce_candidate(cards[0].nonce, i))) taken |= uint64_t(1) << i;
  }
  std::vector<uint64_t> takens(static_cast<size_t>(world_nranks_));
  hc.rail.begin(uint32_t(Coll::kSplit), 2);
  SCL_TRY(hier::allgather_bytes(hc, &taken, sizeof taken, takens.data()));
  for (uint64_t t : takens) taken |= t;
  int pick = 0;
  while (pick < kNonceCandidates && (taken >> pick & 1)) ++pick;
  if (pick == kNonceCandidates) {
    return Errorf(sclInternalError, "heartbeat: %d nonces tried, all taken", kNonceCandidates);
  }
  const net::Rail& rail = *rail_;
  Status started = (*hb)->start(
      names, world_rank_, nonce_candidate(cards[0].nonce, pick), std::move(watched),
      process_value(Var::kNetLostMs), [&rail](int w) { return rail.who(w); },
      Deadline::after_ms(cfg_.timeout_ms.value),
      ShrinkRecord::words_for(world_nranks_) * sizeof(uint64_t));
  if (!started.ok()) {
    // The peers that started must fail too, not take our closing for a goodbye.
    (*hb)->fail(net::Heartbeat::State::kFailed, world_rank_);
    return started;
  }
  heartbeat_ = std::move(*hb);
  return Status::Ok();
}

}  // namespace stratacl
