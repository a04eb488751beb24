#include "bootstrap/root.h"

#include <poll.h>
#include <sys/socket.h>

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
// Connections waiting for their hello, at most. While that many wait, the root stops accepting:
// further ranks queue in the kernel's backlog (and their connect retries), so strangers that
// connect and say nothing cannot grow our memory, and they are dropped after the grace.
constexpr size_t kMaxPending = 1024;
constexpr size_t kHelloPayload = 16 + kRankInfoBytes;

struct Pending {
  UniqueFd fd;
  std::vector<uint8_t> buf;
  int64_t since_ns;
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
    // A full pending list leaves the listener out of the poll (fd -1 is ignored).
    std::vector<pollfd> fds{{pending_.size() < kMaxPending ? listener : -1, POLLIN, 0}};
    for (auto& p : pending_) fds.push_back({p.fd.get(), POLLIN, 0});
    int wait_ms = deadline_.remaining_ms() < 100 ? deadline_.remaining_ms() : 100;
    if (poll(fds.data(), fds.size(), wait_ms) < 0) return;  // EINTR too: the loop polls again
    if (fds[0].revents & POLLIN) {
      int c = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (c >= 0) pending_.push_back({UniqueFd(c), {}, now_ns()});
    }
    const int64_t now = now_ns();
    std::vector<Pending> keep;
    for (size_t i = 0; i < pending_.size(); ++i) {
      Pending& p = pending_[i];
      bool alive = (i + 1 < fds.size() && fds[i + 1].revents) ? read_some(p) : true;
      if (alive && now - p.since_ns < kHelloGraceMs * 1000000) keep.push_back(std::move(p));
    }
    pending_ = std::move(keep);
  }

  // Returns false when the connection is finished (joined or dropped).
  bool read_some(Pending& p) {
    const size_t want = kHeaderBytes + kHelloPayload;
    uint8_t tmp[256];
    ssize_t r = recv(p.fd.get(), tmp, std::min(sizeof tmp, want - p.buf.size()), 0);
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
  Rendezvous(secret, timeout_ms).run(listener.get());
}

Result<sclUniqueId> serve_new_unique_id(int64_t timeout_ms) {
  Result<Secret> secret = random_secret();
  if (!secret.ok()) return secret.status();
  IdData id;
  id.secret = *secret;
  id.root.sin_family = AF_INET;
  id.root.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (const std::string a = process_text(Var::kBootstrapAddr); !a.empty()) {
    Result<sockaddr_in> addr = parse_host_port(a + ":1", Deadline::after_ms(timeout_ms));
    if (!addr.ok()) return addr.status();
    id.root = *addr;
    id.root.sin_port = 0;
  }
  Result<UniqueFd> listener = tcp_listen(&id.root);
  if (!listener.ok()) return listener.status();
  start_root(std::move(*listener), id.secret, timeout_ms).detach();
  return encode_id(id);
}

std::jthread start_root(UniqueFd listener, const Secret& secret, int64_t timeout_ms) {
  return std::jthread([fd = std::move(listener), secret, timeout_ms]() mutable {
    serve_root(std::move(fd), secret, timeout_ms);
  });
}

}  // namespace stratacl::bootstrap
