#include "options.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <limits>
#include <optional>

#include "collectives.h"
#include "core/byte_size.h"
#include "datatypes.h"

namespace stratacl::bench {
namespace {

constexpr size_t kDefaultBytes = size_t{32} << 20;  // nccl-tests' default for -b and -e

struct Flag {
  char short_name;  // for long-only options, only the internal key
  std::string_view long_name;
  bool long_only = false;
};

// Every option takes a value except -h; long names are those of nccl-tests where it has one.
constexpr Flag kFlags[] = {
    {'b', "minbytes"},  {'e', "maxbytes"},     {'i', "stepbytes"},  {'f', "stepfactor"},
    {'n', "iters"},     {'w', "warmup_iters"}, {'c', "check"},      {'d', "datatype"},
    {'o', "op"},        {'r', "root"},         {'R', "repeats"},    {'m', "mem", true},
    {'C', "csv", true}, {'J', "json", true},   {'M', "mode", true}, {'h', "help"},
};

std::optional<char> look_up_long(std::string_view name) {
  for (const Flag& flag : kFlags) {
    if (flag.long_name == name) return flag.short_name;
  }
  return std::nullopt;
}

bool is_short_flag(char c) {
  for (const Flag& flag : kFlags) {
    // --mem, --mode, --csv and --json have no short spelling; their letters are internal keys.
    if (flag.short_name == c && !flag.long_only) return true;
  }
  return false;
}

// A decimal number with an optional K, M or G suffix (powers of 1024), not negative.
std::optional<size_t> parse_size(std::string_view text) {
  const std::string copy(text);  // scl_parse_byte_size reads a NUL-terminated string
  long long value = 0;
  if (scl_parse_byte_size(copy.c_str(), &value) != 0 || value < 0) return std::nullopt;
  return size_t(value);
}

std::optional<long long> parse_integer(std::string_view text) {
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

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

// Parses one option value into `options`; returns an error message or an empty string.
// `flag` is the option as the user spelled it, for the message.
std::string apply_option(char key, std::string_view flag, std::string_view value,
                         Options& options) {
  auto integer_in = [&](long long low, long long high, int& out) -> std::string {
    std::optional<long long> parsed = parse_integer(value);
    if (!parsed || *parsed < low || *parsed > high) {
      return "option " + std::string(flag) + ": '" + std::string(value) +
             "' is not an integer in [" + std::to_string(low) + ", " + std::to_string(high) + "]";
    }
    out = static_cast<int>(*parsed);
    return "";
  };
  constexpr long long kIntMax = std::numeric_limits<int>::max();

  switch (key) {
    case 'b':
    case 'e':
    case 'i': {
      std::optional<size_t> size = parse_size(value);
      if (!size) {
        return "option " + std::string(flag) + ": '" + std::string(value) +
               "' is not a size (a number with an optional K, M or G suffix)";
      }
      if (key == 'b') {
        options.min_bytes = *size;
      } else if (key == 'e') {
        options.max_bytes = *size;
      } else {
        options.step_bytes = *size;
      }
      if (key == 'i' && *size == 0) return "option " + std::string(flag) + ": step must be > 0";
      return "";
    }
    case 'f': {
      int factor = 0;
      if (std::string error = integer_in(1, kIntMax, factor); !error.empty()) return error;
      options.step_factor = static_cast<size_t>(factor);
      return "";
    }
    case 'n':
      return integer_in(1, kIntMax, options.iters);
    case 'w':
      return integer_in(0, kIntMax, options.warmup);
    case 'R':
      return integer_in(1, 1000, options.repeats);
    case 'r':
      return integer_in(0, kIntMax, options.root);
    case 'c': {
      int check = 0;
      if (std::string error = integer_in(0, 1, check); !error.empty()) return error;
      options.check = check == 1;
      return "";
    }
    case 'd': {
      if (value == "all") {
        options.types.assign(std::begin(kAllTypes), std::end(kAllTypes));
        return "";
      }
      std::optional<sclDataType_t> type = parse_type(value);
      if (!type) {
        return "option " + std::string(flag) + ": unknown type '" + std::string(value) +
               "' (int8 uint8 int32 uint32 int64 uint64 float16/half float32/float "
               "float64/double bfloat16 fp8e4m3 fp8e5m2 all)";
      }
      options.types = {*type};
      return "";
    }
    case 'o': {
      if (value == "all") {
        options.ops.assign(std::begin(kAllOps), std::end(kAllOps));
        return "";
      }
      std::optional<sclRedOp_t> op = parse_op(value);
      if (!op) {
        return "option " + std::string(flag) + ": unknown operation '" + std::string(value) +
               "' (sum prod max min avg all)";
      }
      options.ops = {*op};
      return "";
    }
    case 'm':
      if (value == "heap") {
        options.mem = MemKind::kHeap;
      } else if (value == "malloc") {
        options.mem = MemKind::kMalloc;
      } else {
        return "option " + std::string(flag) + ": unknown memory kind '" + std::string(value) +
               "' (heap or malloc)";
      }
      return "";
    case 'M': {
      for (Mode mode : {Mode::kAuto, Mode::kZeroCopy, Mode::kStaged, Mode::kCma}) {
        if (value == mode_name(mode)) {
          options.mode = mode;
          return "";
        }
      }
      return "option " + std::string(flag) + ": unknown mode '" + std::string(value) +
             "' (auto zerocopy staged cma)";
    }
    case 'C':
    case 'J':
      if (value.empty()) return "option " + std::string(flag) + " needs a file name";
      (key == 'C' ? options.csv_path : options.json_path) = std::string(value);
      return "";
    default:
      return "option " + std::string(flag) + " is not handled";
  }
}

ParseResult parse_error(std::string message) {
  ParseResult result;
  result.status = ParseResult::Status::kError;
  result.error = std::move(message);
  return result;
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

ParseResult parse_options(int argc, const char* const* argv) {
  ParseResult result;
  Options& options = result.options;
  bool got_min = false, got_max = false, got_factor = false, got_step = false;
  bool got_collective = false, got_mem = false;

  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-') {
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

    // Forms accepted: -b 8, -b8, --minbytes 8, --minbytes=8.
    char key = 0;
    std::string_view flag;
    std::optional<std::string_view> inline_value;
    if (arg.starts_with("--")) {
      std::string_view name = arg.substr(2);
      if (size_t eq = name.find('='); eq != std::string_view::npos) {
        inline_value = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      std::optional<char> found = look_up_long(name);
      flag = arg.substr(0, 2 + name.size());
      if (!found) return parse_error("unknown option '" + std::string(flag) + "'");
      key = *found;
    } else {
      key = arg[1];
      flag = arg.substr(0, 2);
      if (!is_short_flag(key)) return parse_error("unknown option '" + std::string(flag) + "'");
      if (arg.size() > 2) inline_value = arg.substr(2);
    }

    if (key == 'h') {
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
    if (std::string error = apply_option(key, flag, value, options); !error.empty()) {
      return parse_error(error);
    }
    got_min |= key == 'b';
    got_max |= key == 'e';
    got_factor |= key == 'f';
    got_step |= key == 'i';
    got_mem |= key == 'm';
  }

  if (!got_collective) return parse_error("missing collective (one of " + collective_names() + ")");

  // A mode fixes the memory kind; an explicit --mem must agree with it.
  if (options.mode != Mode::kAuto) {
    const MemKind needed = options.mode == Mode::kZeroCopy ? MemKind::kHeap : MemKind::kMalloc;
    if (got_mem && options.mem != needed) {
      return parse_error("option --mode " + std::string(mode_name(options.mode)) + " needs --mem " +
                         std::string(mem_kind_name(needed)) + ", not --mem " +
                         std::string(mem_kind_name(options.mem)));
    }
    options.mem = needed;
  }

  // -i selects additive steps; "-f 1 -i N" (the nccl-tests spelling) is accepted too.
  if (got_step && got_factor && options.step_factor > 1) {
    return parse_error("options -f and -i are mutually exclusive");
  }
  if (!got_step) {
    options.step_bytes = 0;
    if (options.step_factor < 2) {
      return parse_error("option -f: step factor must be at least 2 (use -i for additive steps)");
    }
  }

  // A lone -b or -e moves the other bound along rather than contradicting the default.
  if (got_max && !got_min) options.min_bytes = std::min(kDefaultBytes, options.max_bytes);
  if (got_min && !got_max) options.max_bytes = std::max(kDefaultBytes, options.min_bytes);
  if (options.min_bytes > options.max_bytes) {
    return parse_error("option -b: minimum size " + std::to_string(options.min_bytes) +
                       " exceeds maximum size " + std::to_string(options.max_bytes) + " (-e)");
  }
  if (options.step_bytes == 0 && options.min_bytes == 0) {
    return parse_error("option -b: minimum size must be at least 1 with multiplicative steps");
  }
  return result;
}

std::vector<std::string> selected_collectives(const Options& options) {
  if (options.collective != "all") return split_list(options.collective);
  std::vector<std::string> names;
  for (const Collective& collective : all_collectives()) names.emplace_back(collective.name);
  return names;
}

std::string usage_text() {
  std::string text = "usage: scl-bench <collective>[,<collective>...] [options]\n  collective: ";
  text += collective_names();
  text +=
      "\n"
      "  run under a launcher, e.g.: stratarun -n 4 scl-bench all -b 8 -e 64M -f 4 -c 1\n"
      "\n"
      "  -b, --minbytes N       smallest size in bytes, suffixes K M G (default 32M)\n"
      "  -e, --maxbytes N       largest size in bytes (default 32M)\n"
      "  -f, --stepfactor N     multiply the size by N each step (default 2)\n"
      "  -i, --stepbytes N      add N bytes each step instead\n"
      "  -n, --iters N          timed iterations per row (default 20)\n"
      "  -w, --warmup_iters N   untimed iterations before timing (default 5)\n"
      "  -c, --check 0|1        verify every output element once per row (default 1)\n"
      "  -d, --datatype T|all   int8 uint8 int32 uint32 int64 uint64 float16/half\n"
      "                         float32/float float64/double bfloat16 fp8e4m3 fp8e5m2\n"
      "                         (default float32)\n"
      "  -o, --op OP|all        sum prod max min avg (default sum; reductions only)\n"
      "  -r, --root N           root of broadcast, reduce, gather, scatter (default 0)\n"
      "  -R, --repeats N        time each row N times; the table shows the median, and the\n"
      "                         p99 over the repeats when N > 1 (default 1)\n"
      "      --mem heap|malloc  buffers from sclMemAlloc or posix_memalign (default heap)\n"
      "      --mode M           the memory regime (default auto: as --mem says):\n"
      "                           zerocopy  heap buffers, which peers reach in place\n"
      "                           staged    malloc buffers, copied through the staging area\n"
      "                           cma       malloc buffers registered with sclCommRegister,\n"
      "                                     read by peers with process_vm_readv; the header\n"
      "                                     gives the cost of registering (first and cached)\n"
      "      --csv FILE         also write every row (median and p99 time, algbw, busbw) as CSV\n"
      "      --json FILE        the same rows as one JSON object, after a header giving the\n"
      "                         version, ranks, host, reduction ISA and memcpy bandwidth\n"
      "  -h, --help             this text\n"
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
