#include "launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "binding.h"
#include "child.h"
#include "job_setup.h"
#include "output_relay.h"

namespace stratacl::run {
namespace {

// steady_clock is CLOCK_MONOTONIC on Linux: deadlines must not move with wall-clock changes.
using Clock = std::chrono::steady_clock;

// Signals that stratarun passes on to every live rank.
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// How long ranks get between SIGTERM and SIGKILL.
constexpr std::chrono::seconds kKillDelay{2};

// Spare fds beyond the relay pipes (signalfd, socket, eventfd, std streams, ...).
constexpr rlim_t kSpareFds = 64;

Clock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// poll() timeout for `deadline`: -1 without one, rounded up so that poll never returns just
// before the deadline and makes the loop spin.
int poll_timeout_ms(const std::optional<Clock::time_point>& deadline) {
  if (!deadline) return -1;
  const Clock::duration left = *deadline - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<long long>(ms, INT_MAX));
}

// "1.5" for 1.5 and "100000" for 1e5: echoes --timeout the way a user would have typed it.
std::string format_seconds(double seconds) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.6f", seconds);
  std::string result = text;
  result.erase(result.find_last_not_of('0') + 1);
  if (result.back() == '.') result.pop_back();
  return result;
}

std::string signal_name(int sig) {
  if (const char* abbrev = sigabbrev_np(sig)) return abbrev;
  if (sig >= SIGRTMIN && sig <= SIGRTMAX) return "RTMIN+" + std::to_string(sig - SIGRTMIN);
  return "UNKNOWN";
}

// ---------------------------------------------------------------------------------------------
// Parent side.

class Job {
 public:
  explicit Job(const Options& options) : options_(options), ranks_(options.world_size) {}
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  int run();

 private:
  // What the supervisor is currently waiting for.
  enum class Phase {
    kRunning,      // Normal operation; the deadline (if any) is --timeout.
    kGrace,        // A rank failed; survivors have until the deadline to exit on their own.
    kTerminating,  // Survivors got SIGTERM; at the deadline they get SIGKILL.
    kKilling,      // Survivors got SIGKILL; just reap them.
  };

  struct Rank {
    pid_t pid = -1;
    bool alive = false;
  };

  bool set_up_signals();
  void raise_fd_limit();
  bool launch();
  bool launch_rank(int rank, const std::vector<std::string>& inherited_env);
  // Ranks per host: the namespaces (--netns) split the ranks evenly, or one host holds them all.
  int per_host() const { return options_.world_size / std::max(1, int(options_.netns.size())); }
  int supervise();
  bool handle_signals();
  bool reap_children();
  void on_rank_exit(int rank, int status);
  void on_deadline();
  void signal_live(int sig);
  void kill_and_reap_all();
  std::string live_rank_list() const;

  const Options& options_;
  std::vector<Rank> ranks_;
  std::unordered_map<pid_t, int> rank_of_pid_;
  int live_ = 0;

  UniqueFd signal_fd_;
  UniqueFd root_socket_;
  uint16_t root_port_ = 0;
  std::vector<UniqueFd> netns_fds_;    // one per --netns namespace, opened before any fork
  std::vector<cpu_set_t> cpu_shares_;  // per local rank, with --bind-to core
  std::string secret_;
  std::unique_ptr<OutputRelay> relay_;
  std::optional<rlimit> original_nofile_;

  Clock::time_point start_;
  Phase phase_ = Phase::kRunning;
  std::optional<Clock::time_point> deadline_;
  bool timed_out_ = false;
  std::optional<int> failure_exit_;  // Exit status derived from the first failing rank.
};

Job::~Job() {
  // On every early return: no rank may be left running or unreaped.
  if (live_ > 0) kill_and_reap_all();
}

int Job::run() {
  if (!ensure_standard_fds_open() || !set_up_signals()) return kLauncherFailureExit;
  raise_fd_limit();
  // The backlog must hold every rank connecting at once, and strangers' connections queued
  // beside them (as the library's own root listener).
  if (!make_job_secret(&secret_) ||
      !open_rendezvous_socket(options_.root_ip, 4096, &root_socket_, &root_port_)) {
    return kLauncherFailureExit;
  }
  if (options_.tag_output) relay_ = std::make_unique<OutputRelay>(options_.world_size);
  for (const std::string& ns : options_.netns) {
    netns_fds_.emplace_back(open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC));
    if (!netns_fds_.back().valid()) {
      say_errno("network namespace " + ns);
      return kLauncherFailureExit;
    }
  }

  if (options_.bind_to_core) {
    cpu_shares_ = core_shares(per_host());
    if (cpu_shares_.empty()) {
      say_errno("--bind-to core: reading this process's CPUs");
      return kLauncherFailureExit;
    }
  }

  start_ = Clock::now();
  if (!launch()) return kLauncherFailureExit;
  // Only rank 0 may hold the listening socket: if it dies, connecting ranks must see the
  // connection refused instead of hanging in our backlog.
  root_socket_.reset();
  // Started only now so that every fork() above happened in a single-threaded process.
  if (relay_ != nullptr && !relay_->start()) return kLauncherFailureExit;

  const int status = supervise();
  if (relay_ != nullptr) relay_->finish();
  return status;
}

bool Job::set_up_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  for (int sig : kForwardedSignals) {
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) != 0) {
      say_errno("sigaction");
      return false;
    }
    // Respect a signal our caller chose to ignore (nohup, background jobs of a script):
    // an ignored signal is discarded, so it would never reach the signalfd anyway.
    if (current.sa_handler != SIG_IGN) sigaddset(&set, sig);
  }
  // An inherited SIG_IGN for SIGCHLD would make the kernel reap the ranks behind our back.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  if (sigaction(SIGCHLD, &default_action, nullptr) != 0) {
    say_errno("sigaction(SIGCHLD)");
    return false;
  }
  // A vanished reader of our stdout must show up as EPIPE in the relay, not kill the launcher
  // (and with it, through PR_SET_PDEATHSIG, the whole job).
  struct sigaction ignore_action {};
  ignore_action.sa_handler = SIG_IGN;
  sigemptyset(&ignore_action.sa_mask);
  if (sigaction(SIGPIPE, &ignore_action, nullptr) != 0) {
    say_errno("sigaction(SIGPIPE)");
    return false;
  }
  // Blocked before the first fork, so that no SIGCHLD is lost; the relay thread inherits the
  // mask, so the signals are only ever consumed through the signalfd.
  if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0) {
    say_errno("sigprocmask");
    return false;
  }
  signal_fd_.reset(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signal_fd_.valid()) {
    say_errno("signalfd");
    return false;
  }
  return true;
}

void Job::raise_fd_limit() {
  // With --tag-output stratarun holds two pipe read ends per rank.
  const rlim_t needed =
      (options_.tag_output ? 2 * static_cast<rlim_t>(options_.world_size) : 0) + kSpareFds;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    say_errno("getrlimit(RLIMIT_NOFILE)");
    return;
  }
  if (limit.rlim_cur >= needed) return;
  const rlimit original = limit;
  limit.rlim_cur = std::min(limit.rlim_max, needed);
  // Not fatal: if the limit stays too low, pipe2() reports EMFILE later.
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    say_errno("setrlimit(RLIMIT_NOFILE)");
    return;
  }
  original_nofile_ = original;
}

bool Job::launch() {
  const std::vector<std::string> inherited_env = inherited_environment();
  for (int rank = 0; rank < options_.world_size; ++rank) {
    if (!launch_rank(rank, inherited_env)) return false;  // ~Job() kills the ranks started so far.
  }
  return true;
}

bool Job::launch_rank(int rank, const std::vector<std::string>& inherited_env) {
  // Everything the child touches is built here, before the fork.
  std::vector<std::string> args = options_.command;
  std::vector<char*> argv = to_argv(args);
  std::vector<std::string> env = inherited_env;
  const std::string world = std::to_string(options_.world_size);
  env.push_back("STRATACL_RANK=" + std::to_string(rank));
  env.push_back("STRATACL_WORLD_SIZE=" + world);
  const int ranks_per_host = per_host();
  env.push_back("STRATACL_LOCAL_RANK=" + std::to_string(rank % ranks_per_host));
  env.push_back("STRATACL_LOCAL_WORLD_SIZE=" + std::to_string(ranks_per_host));
  env.push_back("STRATACL_ROOT_ADDR=" + options_.root_ip + ":" + std::to_string(root_port_));
  env.push_back("STRATACL_JOB_SECRET=" + secret_);
  env.push_back("STRATACL_LAUNCHER=stratarun");
  // Unless set, libfabric's libinfinipath takes over SIGINT, SIGTERM and the crash signals when
  // it loads, and exits with status 1 on them (src/net/load_signals.h): a rank must end by the
  // signal it got, as stratarun reports it.
  if (std::none_of(env.begin(), env.end(),
                   [](const std::string& v) { return v.rfind("IPATH_NO_BACKTRACE=", 0) == 0; })) {
    env.push_back("IPATH_NO_BACKTRACE=1");
  }
  if (rank == 0) env.push_back("STRATACL_ROOT_FD=" + std::to_string(root_socket_.get()));
  std::vector<char*> envp = to_argv(env);

  if (relay_ != nullptr && !relay_->create_pipes(rank)) return false;

  ChildPlan plan;
  plan.rank = rank;
  plan.launcher_pid = getpid();
  plan.root_fd = root_socket_.get();
  plan.netns_fd = netns_fds_.empty() ? -1 : netns_fds_[size_t(rank / ranks_per_host)].get();
  plan.relay = relay_.get();
  plan.original_nofile = original_nofile_ ? &*original_nofile_ : nullptr;
  plan.cpus = cpu_shares_.empty() ? nullptr : &cpu_shares_[size_t(rank % ranks_per_host)];
  plan.argv = argv.data();
  plan.envp = envp.data();

  const pid_t pid = fork();
  if (pid < 0) {
    say_errno("fork");
    return false;
  }
  if (pid == 0) run_child(plan);

  ranks_[rank] = Rank{pid, true};
  rank_of_pid_[pid] = rank;
  ++live_;
  if (relay_ != nullptr) relay_->close_child_ends(rank);
  return true;
}

int Job::supervise() {
  if (options_.timeout_seconds) deadline_ = start_ + to_duration(*options_.timeout_seconds);
  while (live_ > 0) {
    pollfd pfd{signal_fd_.get(), POLLIN, 0};
    const int ready = poll(&pfd, 1, poll_timeout_ms(deadline_));
    if (ready < 0 && errno != EINTR) {
      say_errno("poll");
      return kLauncherFailureExit;  // ~Job() kills and reaps the ranks.
    }
    if (ready > 0 && !handle_signals()) return kLauncherFailureExit;
    if (live_ > 0 && deadline_ && Clock::now() >= *deadline_) on_deadline();
  }
  if (timed_out_) return kTimeoutExit;
  return failure_exit_.value_or(0);
}

bool Job::handle_signals() {
  signalfd_siginfo infos[16];
  for (;;) {
    const ssize_t n = read(signal_fd_.get(), infos, sizeof(infos));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      say_errno("read(signalfd)");
      return false;
    }
    for (size_t i = 0; i < static_cast<size_t>(n) / sizeof(infos[0]); ++i) {
      const int sig = static_cast<int>(infos[i].ssi_signo);
      if (sig != SIGCHLD) signal_live(sig);
    }
  }
  // SIGCHLDs coalesce, so whatever woke us up, collect every rank that has exited.
  return reap_children();
}

bool Job::reap_children() {
  while (live_ > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid == 0) return true;
    if (pid < 0) {
      if (errno == EINTR) continue;
      say_errno("waitpid");
      return false;
    }
    // A child we did not fork (inherited across exec from our caller) is reaped and ignored.
    if (const auto it = rank_of_pid_.find(pid); it != rank_of_pid_.end()) {
      on_rank_exit(it->second, status);
    }
  }
  return true;
}

void Job::on_rank_exit(int rank, int status) {
  ranks_[rank].alive = false;
  --live_;
  const bool success = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  // Only the first failure is reported and decides the exit status; ranks dying later are
  // usually just reacting to it (or to our own SIGTERM/SIGKILL).
  if (success || phase_ != Phase::kRunning) return;

  const pid_t pid = ranks_[rank].pid;
  std::string line = "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ") ";
  if (WIFEXITED(status)) {
    failure_exit_ = WEXITSTATUS(status);
    line += "exited with status " + std::to_string(WEXITSTATUS(status));
  } else {
    const int sig = WTERMSIG(status);
    failure_exit_ = 128 + sig;
    line += "was killed by signal " + signal_name(sig) + " (" + std::to_string(sig) + ")";
  }
  say(line);
  // The library makes the survivors fail once a peer is gone; give them time to report that
  // themselves before we terminate them.
  phase_ = Phase::kGrace;
  deadline_ = Clock::now() + to_duration(options_.grace_seconds);
}

void Job::on_deadline() {
  switch (phase_) {
    case Phase::kRunning: {
      timed_out_ = true;
      say("timeout after " + format_seconds(*options_.timeout_seconds) +
          " s; ranks still running: " + live_rank_list());
      signal_live(SIGTERM);
      break;
    }
    case Phase::kGrace:
      for (int rank = 0; rank < options_.world_size; ++rank) {
        if (!ranks_[rank].alive) continue;
        say("terminating rank " + std::to_string(rank) + " (pid " +
            std::to_string(ranks_[rank].pid) + ")");
      }
      signal_live(SIGTERM);
      break;
    case Phase::kTerminating:
      signal_live(SIGKILL);
      phase_ = Phase::kKilling;
      deadline_.reset();
      return;
    case Phase::kKilling:
      deadline_.reset();
      return;
  }
  phase_ = Phase::kTerminating;
  deadline_ = Clock::now() + kKillDelay;
}

void Job::signal_live(int sig) {
  // Safe against pid reuse: a rank's pid stays reserved (as a zombie) until we reap it here.
  for (int rank = 0; rank < options_.world_size; ++rank) {
    if (ranks_[rank].alive && kill(ranks_[rank].pid, sig) != 0) {
      say_errno("kill(rank " + std::to_string(rank) + ")");
    }
  }
}

void Job::kill_and_reap_all() {
  signal_live(SIGKILL);
  for (int rank = 0; rank < options_.world_size; ++rank) {
    if (!ranks_[rank].alive) continue;
    int status = 0;
    while (waitpid(ranks_[rank].pid, &status, 0) < 0) {
      if (errno != EINTR) {
        say_errno("waitpid");
        break;
      }
    }
    ranks_[rank].alive = false;
    --live_;
  }
}

std::string Job::live_rank_list() const {
  std::string list;
  for (int rank = 0; rank < options_.world_size; ++rank) {
    if (!ranks_[rank].alive) continue;
    if (!list.empty()) list += ',';
    list += std::to_string(rank);
  }
  return list;
}

}  // namespace

int run_job(const Options& options) {
  Job job(options);
  return job.run();
}

}  // namespace stratacl::run
