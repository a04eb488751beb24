// stratarun's launcher: forks the ranks, supervises them and decides the exit status.

#ifndef STRATACL_TOOLS_STRATARUN_LAUNCHER_H_
#define STRATACL_TOOLS_STRATARUN_LAUNCHER_H_

#include <optional>
#include <string>
#include <vector>

namespace stratacl::run {

// Largest -n stratarun accepts.
inline constexpr int kMaxWorldSize = 1024;

// Exit status when stratarun itself fails (a syscall error while launching or supervising).
inline constexpr int kLauncherFailureExit = 1;

// Exit status for command-line errors.
inline constexpr int kUsageExit = 2;

// Exit status when --timeout expired (same convention as coreutils timeout).
inline constexpr int kTimeoutExit = 124;

// Exit status of a rank whose program could not be executed (same convention as shells).
inline constexpr int kExecFailureExit = 127;

struct Options {
  // Number of ranks, 1..kMaxWorldSize.
  int world_size = 0;
  // Limit for the whole job; none by default.
  std::optional<double> timeout_seconds;
  // Once a rank failed, how long the others may take to exit on their own.
  double grace_seconds = 3.0;
  // Relay the ranks' output through pipes, prefixing each line with "[rank] ".
  bool tag_output = false;
  // Network namespaces (names under /var/run/netns) to start the ranks in, as "hosts": rank r
  // runs in netns[r / (world_size / netns.size())]. Empty: stratarun's own namespace.
  std::vector<std::string> netns;
  // --bind-to core: each rank of a host on its own share of stratarun's CPUs (binding.h).
  bool bind_to_core = false;
  // The IPv4 address the rendezvous socket listens on (reachable from every namespace).
  std::string root_ip = "127.0.0.1";
  // Program (looked up in PATH like a shell does) and its arguments.
  std::vector<std::string> command;
};

// Launches options.world_size ranks of options.command, supervises them until all have exited,
// and returns stratarun's exit status:
//   0                    every rank exited with status 0;
//   S / 128+N            the first failing rank exited with status S / was killed by signal N;
//   kTimeoutExit         --timeout expired;
//   kLauncherFailureExit stratarun itself failed (the reason is printed).
// Must be called from a single-threaded process; it blocks the signals it forwards.
int run_job(const Options& options);

}  // namespace stratacl::run

#endif  // STRATACL_TOOLS_STRATARUN_LAUNCHER_H_
