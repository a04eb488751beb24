#include "fabric/heap_exchange.h"

#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "fabric/heap.h"

namespace stratacl {
namespace {

using bootstrap::RankInfo;
using bootstrap::Secret;

constexpr int64_t kGraceMs = 2000;  // a connection must deliver its message within this long
constexpr size_t kMaxPending = 64;  // connections waiting for their message, at most

struct FdMsg {
  uint8_t secret[16];
  int32_t rank;
  int32_t pid;
};

sockaddr_un socket_name(const HeapExchange::Name& name, socklen_t* len) {
  static const char kHex[] = "0123456789abcdef";
  std::string text = "stratacl/";
  for (uint8_t b : name) text += kHex[b >> 4], text += kHex[b & 15];
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path + 1, text.data(), text.size());  // sun_path[0] = 0: abstract
  *len = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + text.size());
  return a;
}

// Our message: the secret, who we are, and two fds (data heap read-only, doorbell heap).
struct OwnHeaps {
  UniqueFd data, doorbells;
};

Status send_heaps(int sock, const Secret& secret, int rank, const OwnHeaps& heaps) {
  FdMsg m{};
  std::memcpy(m.secret, secret.data(), 16);
  m.rank = rank;
  m.pid = getpid();
  iovec iov{&m, sizeof m};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(2 * sizeof(int))] = {};
  msghdr h{};
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  h.msg_control = ctrl;
  h.msg_controllen = sizeof ctrl;
  cmsghdr* c = CMSG_FIRSTHDR(&h);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(2 * sizeof(int));
  const int fds[2] = {heaps.data.get(), heaps.doorbells.get()};
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  ssize_t n;
  do n = sendmsg(sock, &h, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n != ssize_t(sizeof m)) return SystemErrorf("heap exchange: sendmsg");
  return Status::Ok();
}

struct Received {
  int rank = -1;
  UniqueFd data, doorbells;
};

// Reads one message that is already waiting (the caller polled). A message without the secret,
// or without exactly two fds, is refused.
Result<Received> recv_heaps(int sock, const Secret& secret) {
  FdMsg m{};
  iovec iov{&m, sizeof m};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(4 * sizeof(int))] = {};
  msghdr h{};
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  h.msg_control = ctrl;
  h.msg_controllen = sizeof ctrl;
  ssize_t n;
  do n = recvmsg(sock, &h, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  std::vector<UniqueFd> fds;  // every fd received is closed unless kept
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds.emplace_back(fd);
    }
  }
  if (n != ssize_t(sizeof m) || fds.size() != 2 || (h.msg_flags & MSG_CTRUNC)) {
    return Errorf(sclRemoteError, "heap exchange: malformed message from a local peer");
  }
  Secret s;
  std::memcpy(s.data(), m.secret, 16);
  if (!bootstrap::secret_equal(s, secret)) {
    return Errorf(sclRemoteError,
                  "heap exchange: a local process without the job secret connected");
  }
  return Received{m.rank, std::move(fds[0]), std::move(fds[1])};
}

// Waits until `sock` is readable, retrying interrupted polls.
Status wait_readable(int sock, const Deadline& deadline, const char* what) {
  for (;;) {
    pollfd p{sock, POLLIN, 0};
    const int rc = poll(&p, 1, deadline.remaining_ms());
    if (rc > 0) return Status::Ok();
    if (rc < 0 && errno != EINTR) return SystemErrorf("heap exchange: poll");
    if (deadline.expired()) return Errorf(sclTimeout, "heap exchange: %s", what);
  }
}

// SO_PEERCRED: the kernel's word on who is at the other end, which a peer cannot forge.
Status check_creds(int sock, const RankInfo& expect) {
  ucred cr{};
  socklen_t len = sizeof cr;
  if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) return SystemErrorf("SO_PEERCRED");
  if (cr.uid != getuid() || cr.pid != expect.pid) {
    return Errorf(
        sclRemoteError,
        "heap exchange: rank %d should be pid %d uid %u, the socket peer is pid %d uid %u",
        expect.rank, expect.pid, getuid(), cr.pid, cr.uid);
  }
  return Status::Ok();
}

// Whether the process at the other end of `sock` may be one of `pids` of our user: strangers are
// told apart before they take a pending slot, so no number of them can crowd a peer out.
bool from_one_of(int sock, const std::vector<pid_t>& pids) {
  ucred cr{};
  socklen_t len = sizeof cr;
  if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) return false;
  return cr.uid == getuid() && std::find(pids.begin(), pids.end(), cr.pid) != pids.end();
}

Result<OwnHeaps> own_heaps() {
  SCL_ASSIGN_OR_RETURN(auto* data, Heap::instance());
  SCL_ASSIGN_OR_RETURN(auto* bells, Heap::doorbells());
  SCL_ASSIGN_OR_RETURN(UniqueFd ro, data->share_fd(false));
  SCL_ASSIGN_OR_RETURN(UniqueFd rw, bells->share_fd(true));
  return OwnHeaps{std::move(ro), std::move(rw)};
}

}  // namespace

Result<HeapExchange> HeapExchange::listen(const Secret& secret) {
  Name name;
  if (getrandom(name.data(), name.size(), 0) != ssize_t(name.size()))
    return SystemErrorf("heap exchange: getrandom");
  UniqueFd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return SystemErrorf("heap exchange: socket");
  socklen_t len;
  sockaddr_un a = socket_name(name, &len);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&a), len) != 0) {
    return SystemErrorf("heap exchange: bind");
  }
  if (::listen(fd.get(), 1024) != 0) return SystemErrorf("heap exchange: listen");
  return HeapExchange(std::move(fd), secret, name);
}

Result<std::vector<PeerHeapRef>> HeapExchange::exchange(const std::vector<RankInfo>& table,
                                                        const std::vector<int>& local, int me,
                                                        const Deadline& deadline) {
  SCL_ASSIGN_OR_RETURN(OwnHeaps mine, own_heaps());
  std::vector<Received> got(table.size());
  // Lower ranks accept, higher ranks connect: the dependency graph has no cycle, so no deadlock.
  for (int j : local) {
    if (j >= me) continue;
    UniqueFd s(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    if (!s.valid()) return SystemErrorf("heap exchange: socket");
    socklen_t len;
    sockaddr_un a = socket_name(table[j].exchange_name, &len);
    while (connect(s.get(), reinterpret_cast<sockaddr*>(&a), len) != 0) {
      if ((errno != EAGAIN && errno != ECONNREFUSED && errno != EINTR) || deadline.expired()) {
        return SystemErrorf("heap exchange: connect to local rank %d (pid %d)", j, table[j].pid);
      }
      usleep(1000);
    }
    SCL_TRY(check_creds(s.get(), table[j]));
    SCL_TRY(send_heaps(s.get(), secret_, me, mine));
    SCL_TRY(wait_readable(s.get(), deadline, "a local peer did not answer in time"));
    SCL_ASSIGN_OR_RETURN(Received r, recv_heaps(s.get(), secret_));
    if (r.rank != j)
      return Errorf(sclRemoteError, "heap exchange: rank %d answered as %d", j, r.rank);
    got[j] = std::move(r);
  }

  // Accept every higher local rank. A connection from any process but theirs (SO_PEERCRED: our
  // user and one of their pids) is closed at once. The others wait in `pending` until their
  // message arrives; one that stays silent past the grace, or says anything wrong, is dropped
  // without stalling the others. At most kMaxPending wait at once: further ones are refused until
  // a slot frees.
  struct Pending {
    UniqueFd sock;
    Deadline grace;
  };
  std::vector<Pending> pending;
  int expect = 0;
  std::vector<pid_t> peers;
  for (int j : local) {
    if (j <= me) continue;
    ++expect;
    peers.push_back(table[j].pid);
  }
  for (int joined = 0; joined < expect;) {
    std::vector<pollfd> fds{{listener_.get(), POLLIN, 0}};
    for (const Pending& p : pending) fds.push_back({p.sock.get(), POLLIN, 0});
    const int rc = poll(fds.data(), fds.size(), std::min(deadline.remaining_ms(), 100));
    if (rc < 0 && errno != EINTR) return SystemErrorf("heap exchange: poll");
    if (deadline.expired()) {
      return Errorf(sclTimeout, "heap exchange: %d local peers never delivered their heaps",
                    expect - joined);
    }
    std::vector<Pending> keep;
    for (size_t i = 0; i < pending.size(); ++i) {
      Pending& p = pending[i];
      if (!(fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) {
        if (!p.grace.expired()) keep.push_back(std::move(p));
        continue;
      }
      Result<Received> r = recv_heaps(p.sock.get(), secret_);
      if (!r.ok()) continue;  // a stranger: drop it and keep waiting for the real peers
      const int from = r->rank;
      if (from <= me || from >= int(table.size()) || got[from].rank >= 0 ||
          table[from].host_hash != table[me].host_hash ||
          !check_creds(p.sock.get(), table[from]).ok()) {
        continue;
      }
      SCL_TRY(send_heaps(p.sock.get(), secret_, me, mine));
      got[from] = std::move(*r);
      ++joined;
    }
    pending = std::move(keep);
    if (fds[0].revents & POLLIN) {
      for (;;) {
        UniqueFd s(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
        if (!s.valid()) break;  // EAGAIN: nothing more to accept now (EINTR: next round)
        if (!from_one_of(s.get(), peers)) continue;   // a stranger: closed at once
        if (pending.size() >= kMaxPending) continue;  // refused: closed at once
        pending.push_back(Pending{std::move(s), Deadline::after_ms(kGraceMs)});
      }
    }
  }
  listener_.reset();  // nothing stays open after init

  std::vector<PeerHeapRef> maps(table.size());
  for (int j : local) {
    if (j == me) {
      SCL_ASSIGN_OR_RETURN(maps[j], PeerHeapRef::self());
      continue;
    }
    const PeerHeapFds fds{got[j].data.get(), got[j].doorbells.get(), table[j].heap_bytes,
                          table[j].doorbell_bytes};
    Result<PeerHeapRef> m = PeerHeapRef::acquire(table[j].heap_nonce, fds);
    if (!m.ok())
      return Status(m.status().code(), "rank " + std::to_string(j) + ": " + m.status().message());
    maps[j] = std::move(*m);
  }
  return maps;
}

}  // namespace stratacl
