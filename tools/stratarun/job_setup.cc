#include "job_setup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>

#include "output_relay.h"

extern char** environ;

namespace stratacl::run {

// Children inherit fds 0-2 and the relay relies on them being taken; if stratarun was started
// with one closed, occupy it with /dev/null so no pipe or socket lands there by accident.
bool ensure_standard_fds_open() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) >= 0) continue;
    if (errno != EBADF) {
      say_errno("fcntl(F_GETFD)");
      return false;
    }
    // Deliberately not O_CLOEXEC: this is the ranks' standard stream.
    const int opened = open("/dev/null", O_RDWR);
    if (opened < 0) {
      say_errno("open(/dev/null)");
      return false;
    }
    if (opened != fd) {
      say("cannot reopen a closed standard file descriptor");
      close(opened);
      return false;
    }
  }
  return true;
}

bool make_job_secret(std::string* secret) {
  unsigned char bytes[16];
  size_t filled = 0;
  while (filled < sizeof(bytes)) {
    const ssize_t n = getrandom(bytes + filled, sizeof(bytes) - filled, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      say_errno("getrandom");
      return false;
    }
    filled += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  secret->clear();
  for (unsigned char byte : bytes) {
    secret->push_back(kHex[byte >> 4]);
    secret->push_back(kHex[byte & 0xf]);
  }
  return true;
}

// Creates the rendezvous socket before any rank exists, so rank 0 can accept on it and the
// others can connect to it without racing on who binds first.
bool open_rendezvous_socket(const std::string& ip, int backlog, UniqueFd* socket_fd,
                            uint16_t* port) {
  socket_fd->reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!socket_fd->valid()) {
    say_errno("socket");
    return false;
  }
  const int one = 1;
  if (setsockopt(socket_fd->get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
    say_errno("setsockopt(SO_REUSEADDR)");
    return false;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  inet_pton(AF_INET, ip.c_str(), &address.sin_addr);  // checked by the option parser
  address.sin_port = 0;                               // Let the kernel pick a free port.
  if (bind(socket_fd->get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    say_errno("bind(" + ip + ":0)");
    return false;
  }
  if (listen(socket_fd->get(), backlog) != 0) {
    say_errno("listen");
    return false;
  }
  socklen_t length = sizeof(address);
  if (getsockname(socket_fd->get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    say_errno("getsockname");
    return false;
  }
  *port = ntohs(address.sin_port);
  return true;
}

namespace {

// Variables stratarun sets for each rank; inherited values of the same names are dropped so a
// nested launch (or a stale shell export) cannot leak through, STRATACL_ROOT_FD in particular.
constexpr std::string_view kLauncherVariables[] = {
    "STRATACL_RANK",      "STRATACL_WORLD_SIZE", "STRATACL_LOCAL_RANK", "STRATACL_LOCAL_WORLD_SIZE",
    "STRATACL_ROOT_ADDR", "STRATACL_ROOT_FD",    "STRATACL_JOB_SECRET", "STRATACL_LAUNCHER",
};

// True if `entry` ("NAME=value") sets one of the variables stratarun provides itself.
bool is_launcher_variable(std::string_view entry) {
  return std::any_of(
      std::begin(kLauncherVariables), std::end(kLauncherVariables), [&](std::string_view name) {
        return entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=';
      });
}

}  // namespace

// stratarun's own environment minus the variables it sets per rank.
std::vector<std::string> inherited_environment() {
  std::vector<std::string> inherited;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (!is_launcher_variable(*entry)) inherited.emplace_back(*entry);
  }
  return inherited;
}

// Turns strings into the null-terminated char* array that exec wants. The strings must outlive
// the returned vector.
std::vector<char*> to_argv(std::vector<std::string>& strings) {
  std::vector<char*> argv;
  argv.reserve(strings.size() + 1);
  for (std::string& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  return argv;
}

}  // namespace stratacl::run
