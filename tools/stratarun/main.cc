// stratarun: launches N local ranks of a StrataCL program.
//
//   stratarun -n N [--timeout SEC] [--grace SEC] [--tag-output] [--netns NS,...
//             --root-addr IP] [--bind-to core|none] [--] prog [args...]

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "launcher.h"
#include "output_relay.h"

namespace stratacl::run {
namespace {

// Longest accepted --timeout/--grace (about three years): keeps the conversion to clock ticks
// far away from overflow.
constexpr double kMaxSeconds = 1e8;

constexpr std::string_view kUsage =
    "Usage: stratarun -n N [--timeout SEC] [--grace SEC] [--tag-output] [--] prog [args...]\n"
    "\n"
    "Runs N ranks of prog on this machine and supervises them.\n"
    "\n"
    "Options:\n"
    "  -n N, -np N, --np N  number of ranks, 1 to 1024 (also -n=N)\n"
    "  --timeout SEC        terminate the job if it still runs after SEC seconds (exit 124)\n"
    "  --grace SEC          once a rank failed, how long the others may take to exit on their\n"
    "                       own before they are terminated (default 3)\n"
    "  --tag-output         prefix every output line with \"[rank] \"\n"
    "  --netns NS,NS,...    start the ranks in these network namespaces (/var/run/netns), N/k\n"
    "                       consecutive ranks in each: each namespace is a \"host\"\n"
    "  --root-addr IP       the rendezvous listens on IP (default 127.0.0.1; with --netns, an\n"
    "                       address every namespace reaches)\n"
    "  --bind-to core|none  core: bind each rank of a host to its own share of the CPUs\n"
    "                       stratarun may use (L ranks, C CPUs: C/L each, or CPU l mod C where\n"
    "                       L > C); none (default): leave placement to the scheduler\n"
    "  --                   end of options\n"
    "  -h, --help           show this help\n"
    "\n"
    "SEC may be a fraction (0.5). Each rank gets STRATACL_RANK, STRATACL_WORLD_SIZE,\n"
    "STRATACL_LOCAL_RANK, STRATACL_LOCAL_WORLD_SIZE, STRATACL_ROOT_ADDR, STRATACL_JOB_SECRET,\n"
    "STRATACL_LAUNCHER=stratarun and, unless set, IPATH_NO_BACKTRACE=1 (so that libfabric's\n"
    "libinfinipath leaves the ranks' signals alone); rank 0 also gets STRATACL_ROOT_FD.\n"
    "\n"
    "Exit status: 0 if every rank succeeded; otherwise the first failing rank's exit status\n"
    "(128+N if killed by signal N), 124 on timeout, 127 if prog cannot be executed,\n"
    "2 on usage errors, 1 if stratarun itself failed.\n";

// Reports a command-line error and returns the usage exit status.
int usage_error(const std::string& message) {
  say(message + "\nTry 'stratarun --help' for more information.");
  return kUsageExit;
}

std::optional<int> parse_world_size(std::string_view text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value < 1 || value > kMaxWorldSize) return std::nullopt;
  return value;
}

std::optional<double> parse_seconds(std::string_view text) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (!std::isfinite(value) || value < 0 || value > kMaxSeconds) return std::nullopt;
  return value;
}

enum class ValueOption { kWorldSize, kTimeout, kGrace, kNetns, kRootAddr, kBindTo };

std::optional<ValueOption> look_up_value_option(std::string_view name) {
  if (name == "-n" || name == "-np" || name == "--np") return ValueOption::kWorldSize;
  if (name == "--timeout") return ValueOption::kTimeout;
  if (name == "--grace") return ValueOption::kGrace;
  if (name == "--netns") return ValueOption::kNetns;
  if (name == "--root-addr") return ValueOption::kRootAddr;
  if (name == "--bind-to") return ValueOption::kBindTo;
  return std::nullopt;
}

// Stores `value` for `option`; returns an error message, empty on success.
std::string apply_value(ValueOption option, std::string_view name, std::string_view value,
                        Options* options) {
  switch (option) {
    case ValueOption::kWorldSize:
      if (const auto n = parse_world_size(value)) {
        options->world_size = *n;
        return {};
      }
      return "invalid number of ranks '" + std::string(value) + "' (expected 1 to " +
             std::to_string(kMaxWorldSize) + ")";
    case ValueOption::kTimeout:
      if (const auto seconds = parse_seconds(value); seconds && *seconds > 0) {
        options->timeout_seconds = *seconds;
        return {};
      }
      break;
    case ValueOption::kGrace:
      if (const auto seconds = parse_seconds(value)) {
        options->grace_seconds = *seconds;
        return {};
      }
      break;
    case ValueOption::kNetns:
      options->netns.clear();
      for (size_t start = 0; start <= value.size();) {
        const size_t comma = std::min(value.find(',', start), value.size());
        const std::string_view ns = value.substr(start, comma - start);
        if (ns.empty() || ns.find('/') != std::string_view::npos || ns == "." || ns == "..") {
          return "invalid namespace list '" + std::string(value) + "' for --netns";
        }
        options->netns.emplace_back(ns);
        start = comma + 1;
      }
      return {};
    case ValueOption::kBindTo:
      if (value == "core" || value == "none") {
        options->bind_to_core = value == "core";
        return {};
      }
      return "invalid value '" + std::string(value) + "' for --bind-to (expected core or none)";
    case ValueOption::kRootAddr:
      if (in_addr a{}; inet_pton(AF_INET, std::string(value).c_str(), &a) == 1) {
        options->root_ip = std::string(value);
        return {};
      }
      return "invalid IPv4 address '" + std::string(value) + "' for --root-addr";
  }
  return "invalid value '" + std::string(value) + "' for " + std::string(name) +
         " (expected seconds, e.g. 2 or 0.5)";
}

int run_main(int argc, char** argv) {
  Options options;
  int arg_index = 1;
  for (; arg_index < argc; ++arg_index) {
    const std::string_view arg = argv[arg_index];
    if (arg == "--") {
      ++arg_index;
      break;
    }
    if (arg == "-h" || arg == "--help") {
      return write_all(STDOUT_FILENO, kUsage) ? 0 : kLauncherFailureExit;
    }
    if (arg == "--tag-output") {
      options.tag_output = true;
      continue;
    }
    // The first word that does not look like an option is the program.
    if (arg.size() < 2 || arg[0] != '-') break;

    // Value options: "NAME VALUE" or "NAME=VALUE".
    const size_t equals = arg.find('=');
    const std::string_view name = arg.substr(0, equals);
    const auto option = look_up_value_option(name);
    if (!option) return usage_error("unknown option '" + std::string(arg) + "'");
    std::string_view value;
    if (equals != std::string_view::npos) {
      value = arg.substr(equals + 1);
    } else if (arg_index + 1 < argc) {
      value = argv[++arg_index];
    } else {
      return usage_error("option " + std::string(name) + " needs a value");
    }
    if (const std::string error = apply_value(*option, name, value, &options); !error.empty()) {
      return usage_error(error);
    }
  }

  if (options.world_size == 0) return usage_error("the number of ranks (-n N) is required");
  if (!options.netns.empty() && options.world_size % int(options.netns.size()) != 0) {
    return usage_error("-n " + std::to_string(options.world_size) +
                       " ranks do not split evenly over " + std::to_string(options.netns.size()) +
                       " namespaces");
  }
  if (arg_index >= argc) return usage_error("no program given");
  options.command.assign(argv + arg_index, argv + argc);
  return run_job(options);
}

}  // namespace
}  // namespace stratacl::run

int main(int argc, char** argv) {
  try {
    return stratacl::run::run_main(argc, argv);
  } catch (const std::exception& error) {
    // Typically std::bad_alloc; run_job's destructors have already killed and reaped the ranks.
    stratacl::run::say(error.what());
    return stratacl::run::kLauncherFailureExit;
  }
}
