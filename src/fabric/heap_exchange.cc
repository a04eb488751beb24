#include "fabric/heap_exchange.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

#include "fabric/heap.h"

namespace stratacl {
namespace {

using bootstrap::RankInfo;
using bootstrap::Secret;

struct FdMsg {
  uint8_t secret[16];
  int32_t rank;
  int32_t pid;
};

// The name is a hash of the secret, not the secret: abstract names are visible in
// /proc/net/unix to every local user.
sockaddr_un socket_name(const Secret& secret, int rank, socklen_t* len) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : secret) h = (h ^ b) * 1099511628211ull;
  h = (h ^ uint64_t(rank)) * 1099511628211ull;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::string name = "stratacl/" + std::to_string(h) + "/" + std::to_string(rank);
  std::memcpy(a.sun_path + 1, name.data(), name.size());  // sun_path[0] = 0: abstract
  *len = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return a;
}

Status send_fd(int sock, const Secret& secret, int rank, int fd) {
  FdMsg m{};
  std::memcpy(m.secret, secret.data(), 16);
  m.rank = rank;
  m.pid = getpid();
  iovec iov{&m, sizeof m};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int))] = {};
  msghdr h{};
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  h.msg_control = ctrl;
  h.msg_controllen = sizeof ctrl;
  cmsghdr* c = CMSG_FIRSTHDR(&h);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  if (sendmsg(sock, &h, MSG_NOSIGNAL) != ssize_t(sizeof m))
    return SystemErrorf("heap exchange: sendmsg");
  return Status::Ok();
}

Result<UniqueFd> recv_fd(int sock, const Secret& secret, int* rank, const Deadline& deadline) {
  pollfd p{sock, POLLIN, 0};
  int rc = poll(&p, 1, deadline.remaining_ms());
  if (rc == 0) return Errorf(sclTimeout, "heap exchange: a local peer did not answer in time");
  if (rc < 0) return SystemErrorf("heap exchange: poll");
  FdMsg m{};
  iovec iov{&m, sizeof m};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int))] = {};
  msghdr h{};
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  h.msg_control = ctrl;
  h.msg_controllen = sizeof ctrl;
  ssize_t n = recvmsg(sock, &h, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  UniqueFd fd;
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int got;
      std::memcpy(&got, CMSG_DATA(c), sizeof got);
      fd.reset(got);
    }
  }
  if (n != ssize_t(sizeof m) || !fd.valid()) {
    return Errorf(sclRemoteError, "heap exchange: malformed message from a local peer");
  }
  Secret s;
  std::memcpy(s.data(), m.secret, 16);
  if (!bootstrap::secret_equal(s, secret)) {
    return Errorf(sclRemoteError,
                  "heap exchange: a local process without the job secret connected");
  }
  *rank = m.rank;
  return fd;
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

}  // namespace

Result<HeapExchange> HeapExchange::listen(const Secret& secret, int rank) {
  UniqueFd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return SystemErrorf("heap exchange: socket");
  socklen_t len;
  sockaddr_un a = socket_name(secret, rank, &len);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&a), len) != 0) {
    return SystemErrorf("heap exchange: bind (is rank %d started twice?)", rank);
  }
  if (::listen(fd.get(), 1024) != 0) return SystemErrorf("heap exchange: listen");
  return HeapExchange(std::move(fd), secret);
}

Result<std::vector<PeerHeapRef>> HeapExchange::exchange(const std::vector<RankInfo>& table,
                                                        const std::vector<int>& local, int me,
                                                        int heap_fd, const Deadline& deadline) {
  std::vector<UniqueFd> fds(table.size());
  // Lower ranks accept, higher ranks connect: the dependency graph has no cycle, so no deadlock.
  for (int j : local) {
    if (j >= me) continue;
    UniqueFd s(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    socklen_t len;
    sockaddr_un a = socket_name(secret_, j, &len);
    while (connect(s.get(), reinterpret_cast<sockaddr*>(&a), len) != 0) {
      if ((errno != EAGAIN && errno != ECONNREFUSED) || deadline.expired()) {
        return SystemErrorf("heap exchange: connect to local rank %d (pid %d)", j, table[j].pid);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    SCL_TRY(check_creds(s.get(), table[j]));
    SCL_TRY(send_fd(s.get(), secret_, me, heap_fd));
    int from = -1;
    Result<UniqueFd> fd = recv_fd(s.get(), secret_, &from, deadline);
    if (!fd.ok()) return fd.status();
    if (from != j) return Errorf(sclRemoteError, "heap exchange: rank %d answered as %d", j, from);
    fds[j] = std::move(*fd);
  }
  int expect = 0;
  for (int j : local) expect += j > me;
  for (int got = 0; got < expect;) {
    pollfd p{listener_.get(), POLLIN, 0};
    int rc = poll(&p, 1, deadline.remaining_ms());
    if (rc == 0)
      return Errorf(sclTimeout, "heap exchange: %d local peers never connected", expect - got);
    if (rc < 0) continue;
    UniqueFd s(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!s.valid()) continue;
    int from = -1;
    Result<UniqueFd> fd = recv_fd(s.get(), secret_, &from, deadline);
    if (!fd.ok()) continue;  // a stranger: ignore it and keep waiting for the real peers
    if (from <= me || from >= int(table.size()) || fds[from].valid() ||
        table[from].host_hash != table[me].host_hash) {
      continue;
    }
    if (!check_creds(s.get(), table[from]).ok()) continue;
    SCL_TRY(send_fd(s.get(), secret_, me, heap_fd));
    fds[from] = std::move(*fd);
    ++got;
  }
  listener_.reset();  // nothing stays open after init

  std::vector<PeerHeapRef> maps(table.size());
  Heap* heap = existing_heap();
  for (int j : local) {
    if (j == me) {
      maps[j] = PeerHeapRef::self(heap->base(), heap->capacity(), heap->nonce());
      continue;
    }
    Result<PeerHeapRef> m =
        PeerHeapRef::acquire(table[j].heap_nonce, fds[j].get(), table[j].heap_bytes);
    if (!m.ok()) return m.status();
    maps[j] = std::move(*m);
  }
  return maps;
}

}  // namespace stratacl
