#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>

#include "launcher.h"

namespace stratacl::run {

namespace {

// Fixed-size line builder, because snprintf is not async-signal-safe.
class ChildLine {
 public:
  ChildLine& operator<<(std::string_view text) {
    const size_t n = std::min(text.size(), sizeof(buffer_) - 1 - length_);
    std::copy_n(text.data(), n, buffer_ + length_);
    length_ += n;
    return *this;
  }
  ChildLine& operator<<(int value) {
    char digits[16];
    size_t n = 0;
    unsigned magnitude = value < 0 ? 0u - static_cast<unsigned>(value) : value;
    do {
      digits[n++] = static_cast<char>('0' + magnitude % 10);
      magnitude /= 10;
    } while (magnitude != 0);
    if (value < 0) *this << "-";
    while (n > 0) *this << std::string_view(&digits[--n], 1);
    return *this;
  }
  // Appends the newline and writes the line with a single write().
  void write_to_stderr() {
    buffer_[length_++] = '\n';
    (void)write_all(STDERR_FILENO, std::string_view(buffer_, length_));
  }

 private:
  char buffer_[1024];
  size_t length_ = 0;
};

[[noreturn]] void child_fail(const ChildPlan& plan, std::string_view what) {
  const int error = errno;
  (ChildLine() << "stratarun: rank " << plan.rank << ": " << what << ": " << errno_text(error))
      .write_to_stderr();
  _exit(kExecFailureExit);
}

// Undoes what stratarun changed in its own signal state: exec keeps ignored dispositions (we
// ignore SIGPIPE) and the signal mask (we block the forwarded signals and SIGCHLD), and a rank
// must start as if launched from a shell.
void reset_signals_in_child(const ChildPlan& plan) {
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    // Fails with EINVAL for the signals glibc reserves for itself; those need no reset.
    (void)sigaction(sig, &default_action, nullptr);
  }
  sigset_t empty;
  sigemptyset(&empty);
  if (sigprocmask(SIG_SETMASK, &empty, nullptr) != 0) child_fail(plan, "sigprocmask");
}

}  // namespace

[[noreturn]] void run_child(const ChildPlan& plan) {
  // Ranks must never outlive the launcher, even if it is SIGKILLed.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) child_fail(plan, "prctl(PR_SET_PDEATHSIG)");
  // If the launcher died between fork() and prctl(), the death signal will never come.
  if (getppid() != plan.launcher_pid) _exit(kLauncherFailureExit);

  if (plan.relay != nullptr && !plan.relay->redirect_in_child(plan.rank)) child_fail(plan, "dup2");
  if (plan.rank == 0) {
    // Rank 0 accepts on the rendezvous socket, so it must survive exec.
    if (fcntl(plan.root_fd, F_SETFD, 0) != 0) child_fail(plan, "fcntl(rendezvous socket)");
  } else if (close(plan.root_fd) != 0) {
    child_fail(plan, "close(rendezvous socket)");
  }
  if (plan.netns_fd >= 0 && setns(plan.netns_fd, CLONE_NEWNET) != 0) child_fail(plan, "setns");
  if (plan.cpus != nullptr && sched_setaffinity(0, sizeof *plan.cpus, plan.cpus) != 0) {
    child_fail(plan, "sched_setaffinity");
  }
  reset_signals_in_child(plan);
  // Programs using select() break on fds >= 1024, so do not pass on our raised limit.
  if (plan.original_nofile != nullptr && setrlimit(RLIMIT_NOFILE, plan.original_nofile) != 0) {
    child_fail(plan, "setrlimit(RLIMIT_NOFILE)");
  }

  execvpe(plan.argv[0], plan.argv, plan.envp);
  const int error = errno;
  (ChildLine() << "stratarun: rank " << plan.rank << ": cannot execute " << plan.argv[0] << ": "
               << errno_text(error))
      .write_to_stderr();
  _exit(kExecFailureExit);
}

}  // namespace stratacl::run
