#include "bootstrap/socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace stratacl::bootstrap {

Result<sockaddr_in> parse_host_port(const std::string& text) {
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
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res) {
    return Errorf(sclSystemError, "address \"%s\": cannot resolve host: %s", text.c_str(),
                  gai_strerror(rc));
  }
  a.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  freeaddrinfo(res);
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
  if (listen(fd.get(), 1024) != 0) return SystemErrorf("bootstrap: listen");
  socklen_t len = sizeof *addr;
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(addr), &len);
  return fd;
}

Result<UniqueFd> tcp_connect(const sockaddr_in& addr, const Deadline& deadline) {
  int backoff_ms = 1;
  for (;;) {
    UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return SystemErrorf("bootstrap: socket");
    if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
      int one = 1;
      setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    int err = errno;
    // The root may not be listening yet (launchers start ranks in any order): retry.
    if (err != ECONNREFUSED && err != ETIMEDOUT && err != EAGAIN && err != EINTR) {
      errno = err;
      return SystemErrorf("bootstrap: connect to root %s", to_string(addr).c_str());
    }
    if (deadline.expired()) {
      return Errorf(sclTimeout, "bootstrap: root %s did not accept before the deadline (%s)",
                    to_string(addr).c_str(), std::strerror(err));
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
  Result<Header> h = decode_header(hdr);
  if (!h.ok()) return h.status();
  std::vector<uint8_t> payload(h->length);
  SCL_TRY(recv_all(fd, payload.data(), payload.size(), deadline));
  *type = h->type;
  return payload;
}

}  // namespace stratacl::bootstrap
