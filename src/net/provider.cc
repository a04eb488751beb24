#include "net/provider.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fi_domain.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <utility>

#include "core/config.h"
#include "net/load_signals.h"

namespace stratacl::net {
namespace {

constexpr uint32_t kApiVersion = FI_VERSION(1, 9);

// What we ask for: reliable datagrams with tagged messages and, if `rma`, writes into registered
// memory (net/one_sided.cc); if `directed`, receives that match the sender's address too, not
// only the tag (whose sender bits anyone can set); and every MR mode bit we honour
// (net/registrations.h): local descriptors, virtual addresses, allocated and bound memory,
// provider keys.
InfoPtr hints(bool rma, bool directed) {
  InfoPtr h(fi_allocinfo());
  h->ep_attr->type = FI_EP_RDM;
  h->caps = FI_MSG | FI_TAGGED | (rma ? FI_RMA | FI_WRITE | FI_REMOTE_WRITE : 0) |
            (directed ? FI_DIRECTED_RECV : 0);
  h->mode = FI_CONTEXT;
  h->domain_attr->mr_mode =
      FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  h->domain_attr->threading = FI_THREAD_DOMAIN;
  h->tx_attr->msg_order = FI_ORDER_SAS;
  h->rx_attr->msg_order = FI_ORDER_SAS;
  return h;
}

// rxm's settings over tcp (asked for, or no RDMA device on this host: no verbs, no efa), each
// unless the user set it. rxm reads them once, at the process's first fi_getinfo.
//  - The eager limit. rxm turns a message above 16 KiB into a rendezvous: a round trip more, and
//    a sender that must progress again before the data moves. With manual progress that tripled
//    allreduce and broadcast at 32 KiB and doubled them at 256 KiB. So the limit becomes
//    kNetEagerMaxBytes (256 KiB); from there rail transfers and the blocks of alltoall, gather
//    and scatter go one-sided after our own clear-to-send (the default of
//    STRATACL_NET_ONE_SIDED_MIN_BYTES is the same constant; from less where a rank takes
//    them from three or more ranks at once, net::Rail::one_sided_at), larger alltoallv and
//    point-to-point messages by rxm's rendezvous. Not higher: at 1 MiB,
//    alltoalls and allgathers of 256-512 KiB blocks at 4 hosts ran 2.6-3.3x slower. Over verbs
//    it must equal rxm's buffer size, so it is left alone there.
//  - The receive buffers each connection asks for. rxm documents 128 but passes 0, the tcp
//    provider's own default, and then grows its pool of 16 KiB bounce buffers about nine times
//    per rank, 1024 buffers (17 MB, zeroed) at a time, some of them inside a call: single calls
//    took 50 ms where they take 1.5 ms. 128 keeps the pool at its first two growths.
// Both measured in docs/PERFORMANCE.md, "The rxm eager limit" and "rxm's receive buffers".
void default_rxm_settings(const std::string& prov) {
  static std::once_flag once;
  std::call_once(once, [&prov] {
    std::error_code ec;
    const std::filesystem::path rdma = "/sys/class/infiniband";
    const bool has_rdma = std::filesystem::exists(rdma, ec) && !std::filesystem::is_empty(rdma, ec);
    const bool tcp = prov.empty() ? !has_rdma : prov.find("tcp") != std::string::npos;
    if (tcp) set_rxm_tcp_defaults();
  });
}

// Every provider with writes into registered memory, then every one with messages (among them
// the same ones again), each with directed receives first: the choice below takes the first good
// entry, so a provider without writes is chosen only where none with them would do (a network
// one, off loopback), and one without directed receives only where it has none.
Result<InfoPtr> getinfo(const std::string& prov) {
  default_rxm_settings(prov);
  InfoPtr out;
  fi_info* tail = nullptr;
  int rc = 0;
  for (const auto& [rma, directed] : {std::pair{true, true}, std::pair{true, false},
                                      std::pair{false, true}, std::pair{false, false}}) {
    InfoPtr h = hints(rma, directed);
    if (!prov.empty()) h->fabric_attr->prov_name = strdup(prov.c_str());
    fi_info* list = nullptr;
    rc = fi_getinfo(kApiVersion, nullptr, nullptr, 0, h.get(), &list);
    if (rc != 0) continue;
    if (tail) {
      tail->next = list;  // one chain: fi_freeinfo frees it whole
    } else {
      out.reset(list);
    }
    for (tail = list; tail->next; tail = tail->next) {
    }
  }
  if (!out) {
    return Errorf(sclSystemError, "libfabric offers no provider%s%s for tagged RDM messages: %s",
                  prov.empty() ? "" : " named ", prov.c_str(), fi_strerror(-rc));
  }
  return out;
}

bool shared_memory_provider(const fi_info& i) {
  const char* p = i.fabric_attr->prov_name;
  return std::strstr(p, "shm") || std::strstr(p, "sm2");
}

bool loopback(const fi_info& i) {
  if (!i.src_addr) return false;
  if (i.addr_format == FI_SOCKADDR_IN) {
    const auto* a = static_cast<const sockaddr_in*>(i.src_addr);
    return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
  }
  if (i.addr_format == FI_SOCKADDR_IN6) {
    const auto* a = static_cast<const sockaddr_in6*>(i.src_addr);
    return IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) || IN6_IS_ADDR_LINKLOCAL(&a->sin6_addr);
  }
  return false;
}

std::string address_text(const fi_info& i) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (i.addr_format == FI_SOCKADDR_IN && i.src_addr) {
    inet_ntop(AF_INET, &static_cast<const sockaddr_in*>(i.src_addr)->sin_addr, buf, sizeof buf);
  } else if (i.addr_format == FI_SOCKADDR_IN6 && i.src_addr) {
    inet_ntop(AF_INET6, &static_cast<const sockaddr_in6*>(i.src_addr)->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

}  // namespace

void set_rxm_tcp_defaults() {
  setenv("FI_OFI_RXM_EAGER_LIMIT", std::to_string(kNetEagerMaxBytes).c_str(), 0);
  setenv("FI_OFI_RXM_MSG_RX_SIZE", "128", 0);
}

std::string describe(const fi_info& i) {
  std::string mr;
  const int m = i.domain_attr->mr_mode;
  const std::pair<int, const char*> bits[] = {{FI_MR_LOCAL, "local"},
                                              {FI_MR_VIRT_ADDR, "virt_addr"},
                                              {FI_MR_ALLOCATED, "allocated"},
                                              {FI_MR_PROV_KEY, "prov_key"},
                                              {FI_MR_ENDPOINT, "endpoint"}};
  for (const auto& [bit, name] : bits) {
    if (!(m & bit)) continue;
    if (!mr.empty()) mr += ',';
    mr += name;
  }
  return std::string(i.fabric_attr->prov_name) + "  " + i.fabric_attr->name + "  " +
         address_text(i) + "  mr_mode=" + (mr.empty() ? "none" : mr) +
         ((i.caps & FI_RMA) ? "  rma" : "") + ((i.caps & FI_DIRECTED_RECV) ? "  directed" : "");
}

Result<InfoPtr> choose_provider() {
  const std::string wanted = process_text(Var::kNetProvider);
  SCL_ASSIGN_OR_RETURN(InfoPtr all, getinfo(wanted));
  (void)give_back_signals();  // a provider loaded just now may have taken them (net/load_signals.h)
  const fi_info* best = nullptr;
  for (const fi_info* i = all.get(); i; i = i->next) {
    if (wanted.empty() && shared_memory_provider(*i)) continue;
    if (!best || (loopback(*best) && !loopback(*i))) best = i;
    if (!loopback(*best)) break;
  }
  if (!best) {
    return Errorf(sclSystemError,
                  "libfabric offers only shared-memory providers here; set "
                  "STRATACL_NET_PROVIDER to a network one");
  }
  return InfoPtr(fi_dupinfo(best));
}

std::vector<std::string> describe_candidates() {
  std::vector<std::string> out;
  Result<InfoPtr> all = getinfo("");
  if (!all.ok()) return {all.status().message()};
  for (const fi_info* i = all->get(); i; i = i->next) {
    std::string line = describe(*i);  // entries differ in attributes this line does not show
    if (std::find(out.begin(), out.end(), line) == out.end()) out.push_back(std::move(line));
  }
  return out;
}

}  // namespace stratacl::net
