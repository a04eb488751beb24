#include "options.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "collectives.h"
#include "nccl_options.h"
#include "option_values.h"

namespace stratacl::bench {
namespace {

constexpr size_t kDefaultBytes = size_t{32} << 20;     // nccl-tests' default for -b and -e
constexpr size_t kDefaultStepBytes = size_t{1} << 20;  // nccl-tests' default for -i

std::string collective_names() {
  std::string names;
  for (const Collective& collective : all_collectives()) {
    names += std::string(collective.name) + ", ";
  }
  return names + "all";
}

// The items of a comma-separated list; empty items are kept, so that "a,,b" is refused.
std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> items;
  for (;;) {
    const size_t comma = text.find(',');
    items.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) return items;
    text.remove_prefix(comma + 1);
  }
}

ParseResult parse_error(std::string message) {
  ParseResult result;
  result.status = ParseResult::Status::kError;
  result.error = std::move(message);
  return result;
}

// -R as a memory regime: 1 (nccl-tests' local registration) is cma, malloc buffers registered
// with sclCommRegister; 2 (symmetric registration) is zerocopy, sclMemAlloc buffers, which every
// rank has registered from the moment they are allocated. An explicit --mode must agree.
std::string apply_registration(int registration, const GivenOptions& given, Options& options) {
  if (registration == 0) return "";
  const Mode wanted = registration == 1 ? Mode::kCma : Mode::kZeroCopy;
  if (given.mode && options.mode != wanted && options.mode != Mode::kAuto) {
    return "option -R " + std::to_string(registration) + " measures --mode " +
           std::string(mode_name(wanted)) + ", not --mode " + std::string(mode_name(options.mode));
  }
  options.mode = wanted;
  return "";
}

}  // namespace

std::string_view mem_kind_name(MemKind kind) { return kind == MemKind::kHeap ? "heap" : "malloc"; }

std::string_view mode_name(Mode mode) {
  switch (mode) {
    case Mode::kZeroCopy:
      return "zerocopy";
    case Mode::kStaged:
      return "staged";
    case Mode::kCma:
      return "cma";
    default:
      return "auto";
  }
}

Mode effective_mode(const Options& options) {
  if (options.mode != Mode::kAuto) return options.mode;
  return options.mem == MemKind::kHeap ? Mode::kZeroCopy : Mode::kStaged;
}

std::string_view collective_of_program(std::string_view argv0) {
  struct Program {
    std::string_view name;
    std::string_view collective;
  };
  static constexpr Program kPrograms[] = {
      {"all_reduce_perf", "allreduce"}, {"all_gather_perf", "allgather"},
      {"alltoall_perf", "alltoall"},    {"broadcast_perf", "broadcast"},
      {"reduce_perf", "reduce"},        {"reduce_scatter_perf", "reducescatter"},
      {"sendrecv_perf", "sendrecv"},    {"gather_perf", "gather"},
      {"scatter_perf", "scatter"},      {"hypercube_perf", "hypercube"},
  };
  const size_t slash = argv0.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? argv0 : argv0.substr(slash + 1);
  for (const Program& program : kPrograms) {
    // nccl-tests builds with a name suffix (all_reduce_perf_mpi) answer too.
    if (base == program.name ||
        (base.starts_with(program.name) && base[program.name.size()] == '_')) {
      return program.collective;
    }
  }
  return {};
}

ParseResult parse_options(int argc, const char* const* argv, std::string_view program_collective) {
  ParseResult result;
  Options& options = result.options;
  GivenOptions given;
  bool got_collective = false;
  if (!program_collective.empty()) {
    options.collective = std::string(program_collective);
    got_collective = true;
  }

  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-') {
      if (!program_collective.empty()) {
        return parse_error("unexpected argument '" + std::string(arg) + "' (" +
                           std::string(program_collective) + " is the program's collective)");
      }
      if (got_collective) return parse_error("unexpected argument '" + std::string(arg) + "'");
      if (arg != "all") {
        // A comma-separated list runs those collectives, in that order.
        for (const std::string& name : split_list(arg)) {
          if (find_collective(name) == nullptr) {
            return parse_error("unknown collective '" + name + "' (one of " + collective_names() +
                               ", or a comma-separated list)");
          }
        }
      }
      options.collective = std::string(arg);
      got_collective = true;
      continue;
    }

    // Forms accepted: -b 8, -b8, --minbytes 8, --minbytes=8, --minb 8 (an abbreviation).
    OptionKey key{};
    std::string_view flag;
    std::optional<std::string_view> inline_value;
    if (arg.starts_with("--")) {
      std::string_view name = arg.substr(2);
      if (size_t eq = name.find('='); eq != std::string_view::npos) {
        inline_value = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      flag = arg.substr(0, 2 + name.size());
      bool ambiguous = false;
      std::optional<OptionKey> found = look_up_long(name, ambiguous);
      if (!found) {
        return parse_error((ambiguous ? "ambiguous option '" : "unknown option '") +
                           std::string(flag) + "'");
      }
      key = *found;
    } else {
      flag = arg.substr(0, 2);
      std::optional<OptionKey> found = look_up_short(arg[1]);
      if (!found) return parse_error("unknown option '" + std::string(flag) + "'");
      key = *found;
      if (arg.size() > 2) inline_value = arg.substr(2);
    }

    if (key == OptionKey::kHelp) {
      result.status = ParseResult::Status::kHelp;
      return result;
    }
    std::string_view value;
    if (inline_value) {
      value = *inline_value;
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return parse_error("option " + std::string(flag) + " needs a value");
    }
    if (std::string error = apply_option(key, flag, value, options, given); !error.empty()) {
      return parse_error(error);
    }
  }

  if (!got_collective) return parse_error("missing collective (one of " + collective_names() + ")");
  if (std::string error = apply_registration(given.registration, given, options); !error.empty()) {
    return parse_error(error);
  }

  // A mode fixes the memory kind; an explicit --mem must agree with it.
  if (options.mode != Mode::kAuto) {
    const MemKind needed = options.mode == Mode::kZeroCopy ? MemKind::kHeap : MemKind::kMalloc;
    if (given.mem && options.mem != needed) {
      return parse_error("option --mode " + std::string(mode_name(options.mode)) +
                         " (or -R) needs " + "--mem " + std::string(mem_kind_name(needed)) +
                         ", not --mem " + std::string(mem_kind_name(options.mem)));
    }
    options.mem = needed;
  }

  // Steps as nccl-tests takes them: a factor above 1 multiplies (and -i is then unused), a
  // factor of 0 or 1 adds -i bytes (1M unless given). -i alone adds too, as scl-bench's default
  // factor of 2 was not asked for.
  const bool additive = given.factor ? options.step_factor <= 1 : given.step;
  if (additive) {
    if (!given.step) options.step_bytes = kDefaultStepBytes;
    if (options.step_bytes == 0) return parse_error("option -i: step must be > 0");
  } else {
    options.step_bytes = 0;
  }

  // A lone -b or -e moves the other bound along rather than contradicting the default.
  if (given.max && !given.min) options.min_bytes = std::min(kDefaultBytes, options.max_bytes);
  if (given.min && !given.max) options.max_bytes = std::max(kDefaultBytes, options.min_bytes);
  if (options.min_bytes > options.max_bytes) {
    return parse_error("option -b: minimum size " + std::to_string(options.min_bytes) +
                       " exceeds maximum size " + std::to_string(options.max_bytes) + " (-e)");
  }
  if (options.step_bytes == 0 && options.min_bytes == 0) {
    return parse_error("option -b: minimum size must be at least 1 with multiplicative steps");
  }
  // As nccl-tests: a skip that would leave no iteration is dropped, with a note.
  if (options.per_iter_skip > 0 && options.per_iter_skip >= options.iters) {
    options.notes.push_back("option -K " + std::to_string(options.per_iter_skip) +
                            " ignored: it would leave none of the " +
                            std::to_string(options.iters) + " iterations");
    options.per_iter_skip = 0;
  }
  return result;
}

std::vector<std::string> selected_collectives(const Options& options) {
  if (options.collective != "all") return split_list(options.collective);
  std::vector<std::string> names;
  for (const Collective& collective : all_collectives()) names.emplace_back(collective.name);
  return names;
}

std::string usage_text(std::string_view program, std::string_view program_collective) {
  std::string text = "usage: " + std::string(program);
  if (program_collective.empty()) {
    text += " <collective>[,<collective>...] [options]\n  collective: " + collective_names() +
            "\n  run under a launcher, e.g.: stratarun -n 4 scl-bench all -b 8 -e 64M -f 4 -c 1\n";
  } else {
    text += " [options]\n  " + std::string(program_collective) +
            " as scl-bench measures it; run under a launcher, e.g.: stratarun -n 2 " +
            std::string(program) + " -b 8 -e 128M -f 2 -g 1\n";
  }
  text +=
      "\n"
      "nccl-tests' options, with their meaning:\n"
      "  -b, --minbytes N         smallest size in bytes, suffixes K M G (default 32M)\n"
      "  -e, --maxbytes N         largest size in bytes (default 32M)\n"
      "  -f, --stepfactor N       multiply the size by N each step (default 2; nccl-tests'\n"
      "                           default is 1: add -i bytes); 0 or 1 adds -i bytes\n"
      "  -i, --stepbytes N        add N bytes each step (default 1M when -f is 0 or 1)\n"
      "  -n, --iters N            timed iterations per row (default 20)\n"
      "  -m, --agg_iters N        calls per timed iteration; the time is per call (default 1;\n"
      "                           the calls run one after the other: StrataCL groups only\n"
      "                           sends and receives)\n"
      "  -w, --warmup_iters N     untimed calls before timing (default 5)\n"
      "  -N, --run_cycles N       pass over the sizes N times, printing every row (default\n"
      "                           1; 0: until killed)\n"
      "  -c, --check N            checked calls per row before the timed ones: every output\n"
      "                           element of every rank compared (default 1; 0: no check)\n"
      "  -o, --op OP|all          sum prod max min avg (default sum; reductions only);\n"
      "                           nccl-tests' mulsum runs as sum, noted\n"
      "  -d, --datatype T|all     int8 uint8 int32 uint32 int64 uint64 float16/half\n"
      "                           float32/float float64/double bfloat16 fp8e4m3/f8e4m3\n"
      "                           fp8e5m2/f8e5m2 (default float32)\n"
      "  -r, --root N             root of broadcast, reduce, gather, scatter (default 0)\n"
      "  -z, --blocking 0|1|2|3   1: a barrier after every call, timed; 3: a barrier after\n"
      "                           every iteration, not timed; 0 and 2 (default 0): calls back\n"
      "                           to back (a call on CPU ranks returns when it is done)\n"
      "  -T, --timeout S          the library's deadline for every wait, in seconds\n"
      "                           (STRATACL_TIMEOUT_MS; default 0: the library's default)\n"
      "  -S, --report_timestamps 0|1  the time of day at the end of every row\n"
      "  -J, --output_file FILE   write every row as JSON (whatever the file's suffix)\n"
      "  -a, --average 0|1|2|3    a row's time from the ranks' times: 0 rank 0's, 1 the mean,\n"
      "                           2 the fastest, 3 the slowest (default 3; nccl-tests' is 1)\n"
      "  -R, --local_register 0|1|2  buffer registration: 1 is --mode cma (malloc buffers\n"
      "                           registered with sclCommRegister), 2 is --mode zerocopy\n"
      "                           (sclMemAlloc buffers, symmetric and registered when\n"
      "                           allocated); 0 (default): as --mode says\n"
      "  -M, --memory 0|1         report resident host memory: after init, the buffers, the\n"
      "                           growth while measuring (the most of any rank)\n"
      "  -u, --unalign N          buffers start N elements past their alignment (default 0)\n"
      "  -I, --per_iter_timing 0|1  time every iteration: min, max, p99 and cv% columns\n"
      "  -K, --per_iter_skip N    leave the first N iterations out of those columns\n"
      "  -h, --help               this text\n"
      "\n"
      "nccl-tests' options accepted and ignored (nothing to act on with CPU ranks):\n"
      "  -t, --nthreads, -g, --ngpus   one rank per process: start ranks with the launcher\n"
      "                                (stratarun -n); a value other than 1 is noted\n"
      "  -p, --parallel_init           each process initialises its one rank already\n"
      "  -y, --stream_null             every call runs on the NULL stream already\n"
      "  -G, --cudagraph               no CUDA graphs\n"
      "  -C, --report_cputime          the times are the host's clock already\n"
      "  -x, --cta_policy, -D, --device_implementation, -V, --device_cta_count\n"
      "                                no GPU thread blocks, no device-side implementation\n"
      "\n"
      "scl-bench's own:\n"
      "      --mem heap|malloc    buffers from sclMemAlloc or posix_memalign (default heap)\n"
      "      --mode M             the memory regime (default auto: as --mem says):\n"
      "                             zerocopy  heap buffers, which peers reach in place\n"
      "                             staged    malloc buffers, copied through the staging area\n"
      "                             cma       malloc buffers registered with sclCommRegister,\n"
      "                                       read by peers with process_vm_readv; the header\n"
      "                                       gives the cost of registering (first and cached)\n"
      "      --repeats N          time each row N times; the table shows the median, and the\n"
      "                           p99 over the repeats when N > 1 (default 1)\n"
      "      --csv FILE           also write every row (median and p99 time, algbw, busbw) as\n"
      "                           CSV\n"
      "      --json FILE          as -J: the rows as one JSON object, after a header giving the\n"
      "                           version, ranks, host, reduction ISA and memcpy bandwidth;\n"
      "                           numbers that are not finite are null\n"
      "\n"
      "Installed as all_reduce_perf, all_gather_perf, alltoall_perf, broadcast_perf, reduce_perf,\n"
      "reduce_scatter_perf, sendrecv_perf, gather_perf, scatter_perf and hypercube_perf too: that\n"
      "name picks the collective, so an nccl-tests command line runs unchanged.\n"
      "\n"
      "exit status: 0 all values correct, 1 wrong values, 2 usage error, 3 library failure\n";
  return text;
}

std::vector<size_t> size_steps(const Options& options) {
  std::vector<size_t> sizes;
  for (size_t size = options.min_bytes;;) {
    sizes.push_back(size);
    // Stop before the next step passes the maximum, or overflows on the way there.
    if (options.step_bytes != 0) {
      if (options.step_bytes > options.max_bytes - size) break;
      size += options.step_bytes;
    } else {
      if (size > options.max_bytes / options.step_factor) break;
      size *= options.step_factor;
    }
  }
  return sizes;
}

}  // namespace stratacl::bench
