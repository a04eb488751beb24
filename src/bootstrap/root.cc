#include "bootstrap/root.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/rendezvous.h"
#include "bootstrap/socket.h"
#include "bootstrap/wire.h"
#include "core/config.h"
#include "core/deadline.h"

namespace stratacl::bootstrap {
namespace {

constexpr int64_t kHelloGraceMs = 5000;  // a connection must say hello within this long
// Connections waiting for their hello, at most, so that strangers who connect and say nothing
// cannot grow our memory. When a new connection finds the list full (or no descriptor is left),
// waiting connections are closed to make room: the oldest of those that sent nothing yet from
// the address that holds the most. A crowd from one address therefore only ever evicts itself,
// and a rank (which says hello as soon as it connects, and is read at the next poll) is not
// crowded out, where stopping to accept left every rank waiting until the crowd's grace ran out.
constexpr size_t kMaxPending = 1024;
// Between two polls: fewer than the evictions take from the newest (kMaxPending / 8 each), so a
// connection accepted in this round is read at the next poll before it could be evicted.
constexpr int kMaxAcceptsPerPoll = 512;
constexpr size_t kHelloPayload = 16 + kRankInfoBytes;

struct Pending {
  UniqueFd fd;
  std::vector<uint8_t> buf;
  int64_t since_ns;
  uint32_t from;  // the peer's IPv4 address
};

class Rendezvous {
 public:
  Rendezvous(const Secret& secret, int64_t timeout_ms)
      : secret_(secret), deadline_(Deadline::after_ms(timeout_ms)) {}

  void run(int listener) {
    while (nranks_ < 0 || int(joined_.size()) < nranks_) {
      if (!failure_.empty()) return fail_all();
      if (deadline_.expired()) {
        failure_ = "rendezvous timed out: " + std::to_string(joined_.size()) + " of " +
                   std::to_string(nranks_) + " ranks arrived" + missing_ranks();
        failure_code_ = sclTimeout;
        return fail_all();
      }
      poll_once(listener);
    }
    std::vector<RankInfo> table;
    for (auto& [rank, j] : joined_) table.push_back(j.info);
    std::vector<uint8_t> msg = encode_table(table);
    for (auto& [rank, j] : joined_) (void)send_all(j.fd.get(), msg.data(), msg.size(), deadline_);
    if (spans_hosts(table)) share_blobs();
  }

 private:
  struct Joined {
    UniqueFd fd;
    RankInfo info;
  };

  std::string missing_ranks() const {
    std::string s;
    for (int r = 0; r < nranks_ && s.size() < 200; ++r) {
      if (!joined_.count(r)) s += (s.empty() ? "; missing ranks " : ",") + std::to_string(r);
    }
    return s;
  }

  void poll_once(int listener) {
    std::vector<pollfd> fds{{listener, POLLIN, 0}};
    for (auto& p : pending_) fds.push_back({p.fd.get(), POLLIN, 0});
    int wait_ms = deadline_.remaining_ms() < 100 ? deadline_.remaining_ms() : 100;
    if (poll(fds.data(), fds.size(), wait_ms) < 0) return;  // EINTR too: the loop polls again
    // Read before accepting, so that an eviction cannot take a connection whose hello is here.
    const int64_t now = now_ns();
    std::vector<Pending> keep;
    for (size_t i = 0; i < pending_.size(); ++i) {
      Pending& p = pending_[i];
      bool alive = (i + 1 < fds.size() && fds[i + 1].revents) ? read_some(p) : true;
      if (alive && now - p.since_ns < kHelloGraceMs * 1000000) keep.push_back(std::move(p));
    }
    pending_ = std::move(keep);
    if (fds[0].revents & POLLIN) accept_queued(listener);
  }

  // Accepts every connection the kernel has queued (a rank may wait behind a crowd there).
  void accept_queued(int listener) {
    for (int i = 0; i < kMaxAcceptsPerPoll; ++i) {
      sockaddr_in from{};
      socklen_t len = sizeof from;
      int c =
          accept4(listener, reinterpret_cast<sockaddr*>(&from), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (c < 0 && (errno == EMFILE || errno == ENFILE) && evict()) continue;
      if (c < 0) return;  // nothing queued any more (or an error: the next poll tells)
      if (pending_.size() >= kMaxPending) evict();
      Pending p{UniqueFd(c), {}, now_ns(), from.sin_addr.s_addr};
      // A rank says hello as it connects: read what came, so that it is not taken for silent.
      if (read_some(p)) pending_.push_back(std::move(p));
    }
  }

  // Makes room: closes an eighth of the list, from the address that holds the most, its
  // connections that sent nothing first, oldest first. False when nothing waits.
  bool evict() {
    if (pending_.empty()) return false;
    std::map<uint32_t, size_t> per_address;
    for (const Pending& p : pending_) ++per_address[p.from];
    uint32_t crowded = pending_.front().from;
    for (const auto& [addr, n] : per_address) {
      if (n > per_address[crowded]) crowded = addr;
    }
    size_t left = std::max<size_t>(1, pending_.size() / 8);
    for (bool silent_only : {true, false}) {
      std::erase_if(pending_, [&](const Pending& p) {
        if (left == 0 || p.from != crowded || (silent_only && !p.buf.empty())) return false;
        --left;
        return true;
      });
    }
    return true;
  }

  // Returns false when the connection is finished (joined or dropped).
  bool read_some(Pending& p) {
    const size_t want = kHeaderBytes + kHelloPayload;
    uint8_t tmp[256];
    ssize_t r = recv(p.fd.get(), tmp, std::min(sizeof tmp, want - p.buf.size()), 0);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
    if (r <= 0) return false;
    p.buf.insert(p.buf.end(), tmp, tmp + r);
    if (p.buf.size() >= kHeaderBytes) {
      Result<Header> h = decode_header(std::span(p.buf.data(), kHeaderBytes));
      if (!h.ok() || h->type != MsgType::kHello || h->length != kHelloPayload) return false;
    }
    if (p.buf.size() < want) return true;
    Result<Hello> hello = decode_hello(std::span(p.buf).subspan(kHeaderBytes));
    // No secret, no reply: a stranger learns nothing, not even that this is StrataCL.
    if (!hello.ok() || !secret_equal(hello->secret, secret_)) return false;
    admit(std::move(p.fd), hello->info);
    return false;
  }

  void admit(UniqueFd fd, const RankInfo& info) {
    if (nranks_ < 0) nranks_ = info.nranks;
    if (info.nranks != nranks_) {
      failure_ = "rank " + std::to_string(info.rank) +
                 " was started with nranks=" + std::to_string(info.nranks) +
                 " but others with nranks=" + std::to_string(nranks_);
    } else if (joined_.count(info.rank)) {
      failure_ = "rank " + std::to_string(info.rank) + " joined twice (pids " +
                 std::to_string(joined_[info.rank].info.pid) + " and " + std::to_string(info.pid) +
                 ")";
    }
    if (!failure_.empty()) {
      std::vector<uint8_t> msg = encode_error(failure_);
      (void)send_all(fd.get(), msg.data(), msg.size(), deadline_);
      return;
    }
    joined_[info.rank] = Joined{std::move(fd), info};
  }

  // The second round of a job across hosts: every rank's blob (its network address), then the
  // table of them to all. A rank that fails to send one fails the job, named.
  void share_blobs() {
    std::vector<std::vector<uint8_t>> blobs;
    for (auto& [rank, j] : joined_) {
      MsgType type;
      Result<std::vector<uint8_t>> msg = recv_message(j.fd.get(), deadline_, &type);
      Result<std::vector<uint8_t>> blob =
          msg.ok() && type == MsgType::kBlob
              ? decode_blob(*msg)
              : Result<std::vector<uint8_t>>(Errorf(sclRemoteError, "no network address"));
      if (!blob.ok()) {
        failure_ = "rank " + std::to_string(rank) + " (pid " + std::to_string(j.info.pid) +
                   ") did not send its network address: " +
                   (msg.ok() ? blob.status().message() : msg.status().message());
        failure_code_ = msg.ok() || msg.status().code() != sclTimeout ? sclRemoteError : sclTimeout;
        return fail_all();
      }
      blobs.push_back(std::move(*blob));
    }
    std::vector<uint8_t> msg = encode_blobs(blobs);
    for (auto& [rank, j] : joined_) (void)send_all(j.fd.get(), msg.data(), msg.size(), deadline_);
  }

  void fail_all() {
    std::vector<uint8_t> msg = encode_error(failure_, failure_code_);
    for (auto& [rank, j] : joined_) (void)send_all(j.fd.get(), msg.data(), msg.size(), deadline_);
  }

  Secret secret_;
  Deadline deadline_;
  int nranks_ = -1;
  std::vector<Pending> pending_;
  std::map<int, Joined> joined_;
  std::string failure_;
  sclResult_t failure_code_ = sclInvalidUsage;
};

}  // namespace

void serve_root(UniqueFd listener, const Secret& secret, int64_t timeout_ms) {
  // Accepts drain the kernel's queue until it is empty: they must not block then.
  fcntl(listener.get(), F_SETFL, fcntl(listener.get(), F_GETFL) | O_NONBLOCK);
  Rendezvous(secret, timeout_ms).run(listener.get());
}

Result<sclUniqueId> serve_new_unique_id(int64_t timeout_ms) {
  SCL_ASSIGN_OR_RETURN(Secret secret, random_secret());
  IdData id;
  id.secret = secret;
  id.root.sin_family = AF_INET;
  id.root.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (const std::string a = process_text(Var::kBootstrapAddr); !a.empty()) {
    SCL_ASSIGN_OR_RETURN(id.root, parse_host_port(a + ":1", Deadline::after_ms(timeout_ms)));
    id.root.sin_port = 0;
  }
  SCL_ASSIGN_OR_RETURN(UniqueFd listener, tcp_listen(&id.root));
  start_root(std::move(listener), id.secret, timeout_ms).detach();
  return encode_id(id);
}

std::jthread start_root(UniqueFd listener, const Secret& secret, int64_t timeout_ms) {
  return std::jthread([fd = std::move(listener), secret, timeout_ms]() mutable {
    serve_root(std::move(fd), secret, timeout_ms);
  });
}

}  // namespace stratacl::bootstrap
