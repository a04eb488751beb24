// Nothing from outside the job can stall or break init.
//  - A local process that connects to a rank's heap-exchange socket and says nothing (it can find
//    the name in /proc/net/unix, where abstract socket names are visible to every local user) is
//    dropped after a short grace while init goes on: rank 1 starts late, so the silent
//    connection is first in rank 0's queue.
//  - Nor can a crowd of them: a process of our user outside the job opens more silent
//    connections than the listener keeps waiting; they are closed at once (SO_PEERCRED).
//  - Nor a crowd of silent TCP connections at the rendezvous root (anyone who reaches its port
//    can connect): the root evicts the crowd's oldest rather than stop accepting.
//  - Signals throughout init, which interrupt its system calls (EINTR), are retried: forty inits
//    with SIGUSR1 delivered to the initialising thread every 100 microseconds.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fault_common.h"

namespace fault {
namespace {

// Connects `per_name` times, and says nothing, to every StrataCL heap-exchange socket in
// /proc/net/unix that is not in `seen` yet; keeps the sockets in `fds`. Returns how many it made.
int connect_to_new_sockets(std::set<std::string>& seen, int per_name, std::vector<int>& fds) {
  int made = 0;
  std::ifstream unix_sockets("/proc/net/unix");
  for (std::string line; std::getline(unix_sockets, line);) {
    const size_t at = line.find("@stratacl/");
    if (at == std::string::npos) continue;
    const std::string name = line.substr(at + 1);
    if (!seen.insert(name).second) continue;
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path + 1, name.data(), name.size());
    const socklen_t len = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    for (int i = 0; i < per_name; ++i) {
      const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
      if (connect(fd, reinterpret_cast<sockaddr*>(&a), len) == 0) {
        fds.push_back(fd);
        ++made;
      } else {
        close(fd);
      }
    }
  }
  return made;
}

// Connects once, and says nothing, to every StrataCL heap-exchange socket that appears while it
// lives.
class SilentSpy {
 public:
  SilentSpy() : thread_([this] { loop(); }) {}
  ~SilentSpy() {
    run_ = false;
    thread_.join();
    for (int fd : fds_) close(fd);
  }
  int connections() const { return connected_.load(); }

 private:
  void loop() {
    std::set<std::string> seen;
    while (run_) {
      connected_ += connect_to_new_sockets(seen, 1, fds_);
      usleep(500);
    }
  }
  std::atomic<bool> run_{true};
  std::atomic<int> connected_{0};
  std::vector<int> fds_;
  std::thread thread_;
};

// A process of our user outside the job: for `seconds`, 100 silent connections to every
// heap-exchange socket that appears, more than a listener keeps waiting. Reports how many it
// made through `pipe_fd`.
[[noreturn]] void crowd(double seconds, int pipe_fd) {
  std::set<std::string> seen;
  std::vector<int> fds;
  int made = 0;
  const double until = now_s() + seconds;
  while (now_s() < until) {
    made += connect_to_new_sockets(seen, 100, fds);
    usleep(500);
  }
  if (write(pipe_fd, &made, sizeof made) != ssize_t(sizeof made)) _exit(1);
  _exit(0);
}

// A stranger on the network: for `seconds`, as many silent TCP connections to the rendezvous
// root's address (STRATACL_ROOT_ADDR) as it can hold, more than the root keeps waiting, opened
// again as the root closes them. Returns how many it opened.
int crowd_root(double seconds) {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  // More than the root keeps waiting (1024), fewer than the kernel queues for it (4096): a crowd
  // beyond the kernel's queue makes any TCP service's clients wait for SYN retries.
  lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, 3000);
  setrlimit(RLIMIT_NOFILE, &lim);
  const std::string root = std::getenv("STRATACL_ROOT_ADDR");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(std::atoi(root.substr(root.rfind(':') + 1).c_str())));
  inet_pton(AF_INET, root.substr(0, root.rfind(':')).c_str(), &a.sin_addr);
  std::vector<int> fds;
  int made = 0;
  const double until = now_s() + seconds;
  while (now_s() < until) {
    // Drop the connections the root closed, and open new ones up to the limit.
    std::erase_if(fds, [&](int fd) {
      char c;
      if (recv(fd, &c, 1, MSG_DONTWAIT) == 0) return close(fd), true;
      return false;
    });
    while (fds.size() + 64 < lim.rlim_cur && now_s() < until) {  // slow under sanitizers
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        if (fd >= 0) close(fd);
        break;
      }
      fds.push_back(fd);
      ++made;
    }
    usleep(1000);
  }
  for (int fd : fds) close(fd);
  return made;
}

// A process of our user outside the job (a child of this rank, so another pid) running `body`,
// which reports a count through the descriptor it is given and exits; finish() returns it.
class Stranger {
 public:
  template <typename Body>
  explicit Stranger(Body body) {
    expect(pipe(fds_) == 0, "pipe");
    pid_ = fork();
    if (pid_ == 0) body(fds_[1]);
  }
  int finish() {
    int made = 0;
    if (read(fds_[0], &made, sizeof made) != ssize_t(sizeof made)) made = -1;
    waitpid(pid_, nullptr, 0);
    close(fds_[0]);
    close(fds_[1]);
    return made;
  }

 private:
  int fds_[2] = {-1, -1};
  pid_t pid_ = -1;
};

void on_signal(int) {}

int my_rank() {
  const char* r = std::getenv("STRATACL_RANK");
  return r ? std::atoi(r) : -1;
}

}  // namespace

int run_init_interference() {
  // 1. A silent stranger in the heap exchange.
  {
    const bool spying = my_rank() == 0;
    std::unique_ptr<SilentSpy> spy(spying ? new SilentSpy() : nullptr);
    if (my_rank() == 1) usleep(500 * 1000);
    const double t0 = now_s();
    sclComm_t comm = init_or_die();
    const double took = now_s() - t0;
    if (spying) {
      expect(spy->connections() > 0, "the spy connected to a heap-exchange socket");
      expect(took < 1.5, "init was not stalled by a silent connection",
             std::to_string(took) + " s");
      std::printf("rank 0: init with %d silent connection(s) in the heap exchange took %.3f s\n",
                  spy->connections(), took);
    }
    expect(sclBarrier(comm, nullptr) == sclSuccess, "barrier after init");
    expect(sclCommDestroy(comm) == sclSuccess, "destroy");
  }
  // 2. A crowd: a process of our user, not of the job (a child of rank 0, so another pid), opens
  // 100 silent connections to every heap-exchange socket, more than the 64 a listener keeps
  // waiting. Credentials are checked before a connection takes a slot, so they never crowd the
  // real peer out (before that check, rank 1 was refused and init failed).
  {
    std::unique_ptr<Stranger> stranger(my_rank() == 0 ? new Stranger([](int fd) { crowd(2.5, fd); })
                                                      : nullptr);
    if (my_rank() == 1) usleep(500 * 1000);
    const double t0 = now_s();
    sclComm_t comm = init_or_die();
    const double took = now_s() - t0;
    expect(sclBarrier(comm, nullptr) == sclSuccess, "barrier after init beside a crowd");
    expect(sclCommDestroy(comm) == sclSuccess, "destroy");
    if (stranger) {
      const int made = stranger->finish();
      expect(made >= 100, "the crowd connected", std::to_string(made) + " connections");
      expect(took < 1.5, "init was not held up by the crowd", std::to_string(took) + " s");
      std::printf("rank 0: init beside %d silent connections of a stranger took %.3f s\n", made,
                  took);
    }
  }
  // 3. A crowd at the rendezvous root: a stranger (a child of rank 1, started while rank 0 still
  // waits for the crowd of case 2) keeps more silent TCP connections open to the root than it
  // keeps waiting. The root closes the crowd's oldest to make room, so the ranks' hellos get in
  // (when it stopped accepting instead, every rank waited for the crowd's 5 s grace).
  {
    int made = -1;
#if defined(__SANITIZE_THREAD__)
    // A forked child of a ThreadSanitizer process can hang: the crowd is a thread there.
    std::thread crowd_thread;
    if (my_rank() == 1) crowd_thread = std::thread([&made] { made = crowd_root(3.0); });
    std::unique_ptr<Stranger> stranger;
#else
    std::unique_ptr<Stranger> stranger(my_rank() == 1 ? new Stranger([](int fd) {
      const int m = crowd_root(3.0);
      _exit(write(fd, &m, sizeof m) == ssize_t(sizeof m) ? 0 : 1);
    })
                                                      : nullptr);
#endif
    const double t0 = now_s();
    sclComm_t comm = init_or_die();
    const double took = now_s() - t0;
    expect(sclBarrier(comm, nullptr) == sclSuccess, "barrier after init beside a root crowd");
    expect(sclCommDestroy(comm) == sclSuccess, "destroy");
    if (my_rank() == 0) {
      // Rank 0 comes last, to a root the crowd fills from its first moment.
      expect(took < 0.5, "init was not held up by the root crowd", std::to_string(took) + " s");
      std::printf("rank 0: init beside a crowd at the rendezvous root took %.3f s\n", took);
    }
#if defined(__SANITIZE_THREAD__)
    if (crowd_thread.joinable()) crowd_thread.join();
#else
    if (stranger) made = stranger->finish();
#endif
    if (my_rank() == 1) {
      expect(made >= 1024, "the crowd connected to the root",
             std::to_string(made) + " connections");
      std::printf("rank 1: the crowd opened %d silent connections to the root\n", made);
    }
  }
  // 4. Interrupted system calls.
  struct sigaction sa {};
  sa.sa_handler = on_signal;  // no SA_RESTART: blocking calls return EINTR
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, nullptr);
  const pthread_t self = pthread_self();
  std::atomic<bool> storm{true};
  std::atomic<long> sent{0};
  std::thread storm_thread([&] {
    while (storm) {
      pthread_kill(self, SIGUSR1);
      ++sent;
      usleep(100);
    }
  });
  for (int i = 0; i < 40; ++i) {
    sclComm_t comm = nullptr;
    const sclResult_t r = sclCommInitFromEnv(&comm);
    expect(r == sclSuccess, "init under a storm of signals",
           std::string(sclGetErrorString(r)) + ": " + sclGetLastError(nullptr));
    if (r != sclSuccess) break;
    expect(sclBarrier(comm, nullptr) == sclSuccess, "barrier under a storm of signals");
    expect(sclCommDestroy(comm) == sclSuccess, "destroy under a storm of signals");
  }
  storm = false;
  storm_thread.join();
  std::printf("rank %d: 40 inits with %ld signals: %s\n", g_rank, sent.load(),
              g_failures ? "FAILED" : "OK");
  return g_failures ? 1 : 0;
}

}  // namespace fault
