// Nothing outside the job can hold the bootstrap past its deadline: a connect to an address that
// never completes the handshake, a name that cannot be resolved, a root flooded with silent
// connections.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "bootstrap/rendezvous.h"
#include "bootstrap/root.h"
#include "bootstrap/socket.h"
#include "bootstrap/wire.h"

using namespace stratacl;
using namespace stratacl::bootstrap;

namespace {

// A listener whose accept queue is full: the kernel drops further SYNs, so a connect to it
// neither succeeds nor fails until its own (two-minute) retries run out.
struct FullListener {
  UniqueFd listener;
  std::vector<UniqueFd> fillers;
  sockaddr_in addr{};
  FullListener() {
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    listener = std::move(*tcp_listen(&addr));
    listen(listener.get(), 0);  // a backlog of (about) one
    for (int i = 0; i < 8; ++i) {
      UniqueFd s(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
      connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
      fillers.push_back(std::move(s));
    }
    usleep(50 * 1000);  // let the handshakes that can complete, complete
  }
};

}  // namespace

TEST(BootstrapDeadlines, ConnectGivesUpAtTheDeadline) {
  FullListener full;
  const int64_t start = now_ns();
  Result<UniqueFd> fd = tcp_connect(full.addr, Deadline::after_ms(500));
  const double waited_s = double(now_ns() - start) / 1e9;
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), sclTimeout) << fd.status().message();
  EXPECT_LT(waited_s, 2.0) << "connect outlived its deadline";
}

TEST(BootstrapDeadlines, NamesResolveWithinTheDeadline) {
  Result<sockaddr_in> a = parse_host_port("localhost:5", Deadline::after_ms(5000));
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(ntohs(a->sin_port), 5);
  // No such name: an error (whether the resolver answers or the deadline ends it), in time.
  const int64_t start = now_ns();
  Result<sockaddr_in> bad = parse_host_port("no-such-host.invalid:5", Deadline::after_ms(1500));
  EXPECT_FALSE(bad.ok());
  EXPECT_LT(double(now_ns() - start) / 1e9, 3.0);
  EXPECT_NE(bad.status().message().find("no-such-host.invalid"), std::string::npos);
}

// Sockets open in this process.
int open_sockets() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(e.path(), ec);
    n += !ec && target.string().rfind("socket:", 0) == 0;
  }
  return n;
}

TEST(BootstrapDeadlines, RootKeepsBoundedPendingConnectionsAndStaysAvailable) {
  Result<Secret> secret = random_secret();
  ASSERT_TRUE(secret.ok());
  IdData id;
  id.secret = *secret;
  id.root.sin_family = AF_INET;
  id.root.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::jthread root = start_root(std::move(*tcp_listen(&id.root)), id.secret, 20000);
  // Far more strangers than the root keeps waiting at once: they connect and say nothing.
  const int before = open_sockets();
  std::vector<UniqueFd> strangers;
  for (int i = 0; i < 3000; ++i) {
    UniqueFd s(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
    connect(s.get(), reinterpret_cast<sockaddr*>(&id.root), sizeof id.root);
    strangers.push_back(std::move(s));
  }
  usleep(300 * 1000);  // the root accepts what it will
  // The root's side of them: every socket here that is not a stranger's own end.
  const int accepted = open_sockets() - before - int(strangers.size());
  EXPECT_LE(accepted, 1024 + 1) << "the root kept more silent connections than its bound";
  RankInfo me;
  me.rank = 0;
  me.nranks = 1;
  me.pid = getpid();
  Result<Joined> table = rendezvous(id, me, Deadline::after_ms(15000));
  ASSERT_TRUE(table.ok()) << table.status().message();
  EXPECT_EQ(table->table.size(), 1u);
}
