#include "bootstrap/socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

namespace stratacl::bootstrap {

namespace {

// getaddrinfo with a deadline: the lookup runs on a thread of its own, and we wait for its answer
// until the deadline. A lookup still running then is left to finish alone: it owns its state.
Result<in_addr> resolve_ipv4(const std::string& host, const Deadline& deadline) {
  struct Lookup {
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;
    int rc = 0;
    in_addr addr{};
  };
  auto lookup = std::make_shared<Lookup>();
  std::thread([lookup, host] {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
    std::lock_guard<std::mutex> lock(lookup->mu);
    lookup->rc = rc != 0 ? rc : res ? 0 : EAI_NONAME;
    if (res) lookup->addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
    if (res) freeaddrinfo(res);
    lookup->done = true;
    lookup->done_cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(lookup->mu);
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::nanoseconds(deadline.remaining_ns());
  if (!lookup->done_cv.wait_until(lock, until, [&] { return lookup->done; })) {
    return Errorf(sclTimeout, "cannot resolve \"%s\" before the deadline", host.c_str());
  }
  if (lookup->rc != 0) {
    return Errorf(sclSystemError, "cannot resolve \"%s\": %s", host.c_str(),
                  gai_strerror(lookup->rc));
  }
  return lookup->addr;
}

}  // namespace

Result<sockaddr_in> parse_host_port(const std::string& text, const Deadline& deadline) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return Errorf(sclInvalidArgument, "address \"%s\" is not host:port", text.c_str());
  }
  std::string host = text.substr(0, colon), port = text.substr(colon + 1);
  char* end;
  long p = std::strtol(port.c_str(), &end, 10);
  if (*end || p <= 0 || p > 65535) {
    return Errorf(sclInvalidArgument, "address \"%s\": bad port", text.c_str());
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(p));
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) == 1) return a;
  Result<in_addr> resolved = resolve_ipv4(host, deadline);
  if (!resolved.ok()) {
    return Status(resolved.status().code(),
                  "address \"" + text + "\": " + resolved.status().message());
  }
  a.sin_addr = *resolved;
  return a;
}

std::string to_string(const sockaddr_in& a) {
  char buf[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
  return std::string(buf) + ":" + std::to_string(ntohs(a.sin_port));
}

Result<UniqueFd> tcp_listen(sockaddr_in* addr) {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return SystemErrorf("bootstrap: socket");
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(addr), sizeof *addr) != 0) {
    return SystemErrorf("bootstrap: bind %s", to_string(*addr).c_str());
  }
  // As deep as the kernel allows (net.core.somaxconn caps it): the queue holds every rank
  // connecting at once, and strangers' connections beside them while the root closes those.
  if (listen(fd.get(), 4096) != 0) return SystemErrorf("bootstrap: listen");
  socklen_t len = sizeof *addr;
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(addr), &len);
  return fd;
}

namespace {

// One non-blocking connect attempt, waited for until the deadline. Returns the errno of a
// failed attempt in *err (0 on success or on timeout).
Result<UniqueFd> connect_once(const sockaddr_in& addr, const Deadline& deadline, int* err) {
  *err = 0;
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return SystemErrorf("bootstrap: socket");
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return fd;
  if (errno != EINPROGRESS && errno != EINTR) {
    *err = errno;
    return UniqueFd();
  }
  for (;;) {
    pollfd p{fd.get(), POLLOUT, 0};
    const int rc = poll(&p, 1, deadline.remaining_ms());
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return UniqueFd();  // the deadline passed while the kernel still tried
    int so_error = 0;
    socklen_t len = sizeof so_error;
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len);
    if (so_error == 0) return fd;
    *err = so_error;
    return UniqueFd();
  }
}

}  // namespace

Result<UniqueFd> tcp_connect(const sockaddr_in& addr, const Deadline& deadline) {
  int backoff_ms = 1;
  int err = 0;
  for (;;) {
    SCL_ASSIGN_OR_RETURN(UniqueFd fd, connect_once(addr, deadline, &err));
    if (fd.valid()) {
      int one = 1;
      setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    // The root may not be listening yet (launchers start ranks in any order): retry.
    if (err != 0 && err != ECONNREFUSED && err != ETIMEDOUT && err != EAGAIN) {
      errno = err;
      return SystemErrorf("bootstrap: connect to root %s", to_string(addr).c_str());
    }
    if (deadline.expired()) {
      return Errorf(sclTimeout, "bootstrap: root %s did not accept before the deadline%s%s",
                    to_string(addr).c_str(), err ? ": " : "", err ? std::strerror(err) : "");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms = backoff_ms < 64 ? backoff_ms * 2 : 64;
  }
}

namespace {
Status wait_io(int fd, short events, const Deadline& deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = poll(&p, 1, deadline.remaining_ms());
    if (rc > 0) return Status::Ok();
    if (rc < 0 && errno != EINTR) return SystemErrorf("bootstrap: poll (%s)", what);
    if (rc == 0 || deadline.expired()) {
      return Errorf(sclTimeout, "bootstrap: timed out while %s", what);
    }
  }
}
}  // namespace

Status wait_readable(int fd, const Deadline& deadline, const std::string& what) {
  return wait_io(fd, POLLIN, deadline, what.c_str());
}

Status send_all(int fd, const void* data, size_t n, const Deadline& deadline) {
  auto* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w, n -= size_t(w);
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EINTR) return SystemErrorf("bootstrap: send");
    SCL_TRY(wait_io(fd, POLLOUT, deadline, "sending"));
  }
  return Status::Ok();
}

Status recv_all(int fd, void* data, size_t n, const Deadline& deadline) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r, n -= size_t(r);
      continue;
    }
    if (r == 0) return Errorf(sclRemoteError, "bootstrap: peer closed the connection");
    if (errno != EAGAIN && errno != EINTR) return SystemErrorf("bootstrap: recv");
    SCL_TRY(wait_io(fd, POLLIN, deadline, "receiving"));
  }
  return Status::Ok();
}

Result<std::vector<uint8_t>> recv_message(int fd, const Deadline& deadline, MsgType* type) {
  uint8_t hdr[kHeaderBytes];
  SCL_TRY(recv_all(fd, hdr, sizeof hdr, deadline));
  SCL_ASSIGN_OR_RETURN(Header h, decode_header(hdr));
  std::vector<uint8_t> payload(h.length);
  SCL_TRY(recv_all(fd, payload.data(), payload.size(), deadline));
  *type = h.type;
  return payload;
}

}  // namespace stratacl::bootstrap
