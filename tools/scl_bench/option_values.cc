#include "option_values.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <optional>

#include "core/byte_size.h"
#include "datatypes.h"

namespace stratacl::bench {
namespace {

// A number of bytes with an optional K, M or G suffix (powers of 1024), not negative. Fractions
// are accepted as nccl-tests accepts them ("1.5M"), rounded down to whole bytes.
std::optional<size_t> parse_size(std::string_view text) {
  const std::string copy(text);  // the parsers read NUL-terminated strings
  long long value = 0;
  if (scl_parse_byte_size(copy.c_str(), &value) == 0) {
    if (value < 0) return std::nullopt;
    return size_t(value);
  }
  char* end = nullptr;
  const double number = std::strtod(copy.c_str(), &end);
  if (end == copy.c_str() || !std::isfinite(number) || number < 0) return std::nullopt;
  double scale = 1;
  switch (*end) {
    case 'K':
    case 'k':
      scale = 1024.0;
      break;
    case 'M':
    case 'm':
      scale = 1024.0 * 1024;
      break;
    case 'G':
    case 'g':
      scale = 1024.0 * 1024 * 1024;
      break;
    default:
      break;
  }
  if (scale != 1) ++end;
  const double bytes = std::floor(number * scale);
  if (*end != '\0' || bytes >= 0x1p63) return std::nullopt;
  return static_cast<size_t>(bytes);
}

std::optional<long long> parse_integer(std::string_view text) {
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::string apply_option(OptionKey key, std::string_view flag, std::string_view value,
                         Options& options, GivenOptions& given) {
  auto integer_in = [&](long long low, long long high, int& out) -> std::string {
    std::optional<long long> parsed = parse_integer(value);
    if (!parsed || *parsed < low || *parsed > high) {
      return "option " + std::string(flag) + ": '" + std::string(value) +
             "' is not an integer in [" + std::to_string(low) + ", " + std::to_string(high) + "]";
    }
    out = static_cast<int>(*parsed);
    return "";
  };
  auto choice = [&](std::initializer_list<long long> allowed, int& out) -> std::string {
    std::optional<long long> parsed = parse_integer(value);
    if (parsed && std::find(allowed.begin(), allowed.end(), *parsed) != allowed.end()) {
      out = static_cast<int>(*parsed);
      return "";
    }
    std::string list;
    for (long long v : allowed) list += (list.empty() ? "" : ", ") + std::to_string(v);
    return "option " + std::string(flag) + ": '" + std::string(value) + "' is not one of " + list;
  };
  constexpr long long kIntMax = std::numeric_limits<int>::max();

  if (std::optional<std::string_view> why = why_ignored(key)) {
    // -t 1 and -g 1 are what scl-bench does anyway; say nothing about them.
    if ((key == OptionKey::kThreads || key == OptionKey::kGpus) && value == "1") return "";
    options.notes.push_back("option " + std::string(flag) + " " + std::string(value) +
                            " ignored: " + std::string(*why));
    return "";
  }

  switch (key) {
    case OptionKey::kMinBytes:
    case OptionKey::kMaxBytes:
    case OptionKey::kStepBytes: {
      std::optional<size_t> size = parse_size(value);
      if (!size) {
        return "option " + std::string(flag) + ": '" + std::string(value) +
               "' is not a size (a number with an optional K, M or G suffix)";
      }
      if (key == OptionKey::kMinBytes) {
        options.min_bytes = *size;
        given.min = true;
      } else if (key == OptionKey::kMaxBytes) {
        options.max_bytes = *size;
        given.max = true;
      } else {
        options.step_bytes = *size;
        given.step = true;
      }
      return "";
    }
    case OptionKey::kStepFactor: {
      int factor = 0;
      if (std::string error = integer_in(0, kIntMax, factor); !error.empty()) return error;
      options.step_factor = static_cast<size_t>(factor);
      given.factor = true;
      return "";
    }
    case OptionKey::kIters:
      return integer_in(1, kIntMax, options.iters);
    case OptionKey::kAggIters:
      return integer_in(1, kIntMax, options.agg_iters);
    case OptionKey::kWarmup:
      return integer_in(0, kIntMax, options.warmup);
    case OptionKey::kCycles:
      return integer_in(0, kIntMax, options.cycles);
    case OptionKey::kCheck:
      return integer_in(0, kIntMax, options.check_iters);
    case OptionKey::kRoot:
      return integer_in(0, kIntMax, options.root);
    case OptionKey::kRepeats:
      return integer_in(1, 1000, options.repeats);
    case OptionKey::kTimeout:
      return integer_in(0, kIntMax / 1000, options.timeout_s);
    case OptionKey::kUnalign:
      return integer_in(0, 4096, options.unalign);
    case OptionKey::kPerIterSkip:
      return integer_in(0, kIntMax, options.per_iter_skip);
    case OptionKey::kBlocking: {
      int blocking = 0;
      if (std::string error = choice({0, 1, 2, 3}, blocking); !error.empty()) return error;
      options.blocking = static_cast<Blocking>(blocking);
      return "";
    }
    case OptionKey::kAverage: {
      int average = 0;
      if (std::string error = choice({0, 1, 2, 3}, average); !error.empty()) return error;
      options.average = static_cast<Average>(average);
      return "";
    }
    case OptionKey::kTimestamps:
    case OptionKey::kMemoryReport:
    case OptionKey::kPerIter: {
      int on = 0;
      if (std::string error = choice({0, 1}, on); !error.empty()) return error;
      (key == OptionKey::kTimestamps     ? options.timestamps
       : key == OptionKey::kMemoryReport ? options.memory_report
                                         : options.per_iter) = on == 1;
      return "";
    }
    case OptionKey::kRegister: {
      std::string error = choice({0, 1, 2}, given.registration);
      if (!error.empty()) {
        return error +
               " (0 none, 1 registered buffers, 2 symmetric; the repeats of earlier "
               "scl-bench versions are --repeats)";
      }
      return "";
    }
    case OptionKey::kDatatype: {
      if (value == "all") {
        options.types.assign(kAllDtypes.begin(), kAllDtypes.end());
        return "";
      }
      std::optional<sclDataType_t> type = parse_dtype(value);
      if (!type) {
        return "option " + std::string(flag) + ": unknown type '" + std::string(value) +
               "' (int8 uint8 int32 uint32 int64 uint64 float16/half float32/float "
               "float64/double bfloat16 fp8e4m3/f8e4m3 fp8e5m2/f8e5m2 all)";
      }
      options.types = {*type};
      return "";
    }
    case OptionKey::kOp: {
      if (value == "all") {
        options.ops.assign(std::begin(kAllOps), std::end(kAllOps));
        return "";
      }
      std::optional<sclRedOp_t> op = parse_op(value);
      if (!op && value == "mulsum") {
        // nccl-tests' premultiplied sum (sclRedOpCreatePreMulSum): the check has no expected
        // values for it, so the row runs as sum and says so.
        options.notes.push_back(
            "option -o mulsum measured as sum: scl-bench does not check a "
            "premultiplied sum");
        op = sclSum;
      }
      if (!op) {
        return "option " + std::string(flag) + ": unknown operation '" + std::string(value) +
               "' (sum prod max min avg all)";
      }
      options.ops = {*op};
      return "";
    }
    case OptionKey::kMem:
      if (value == "heap") {
        options.mem = MemKind::kHeap;
      } else if (value == "malloc") {
        options.mem = MemKind::kMalloc;
      } else {
        return "option " + std::string(flag) + ": unknown memory kind '" + std::string(value) +
               "' (heap or malloc)";
      }
      given.mem = true;
      return "";
    case OptionKey::kMode: {
      for (Mode mode : {Mode::kAuto, Mode::kZeroCopy, Mode::kStaged, Mode::kCma}) {
        if (value == mode_name(mode)) {
          options.mode = mode;
          given.mode = true;
          return "";
        }
      }
      return "option " + std::string(flag) + ": unknown mode '" + std::string(value) +
             "' (auto zerocopy staged cma)";
    }
    case OptionKey::kCsv:
    case OptionKey::kJson:
    case OptionKey::kOutputFile:
      if (value.empty()) return "option " + std::string(flag) + " needs a file name";
      (key == OptionKey::kCsv ? options.csv_path : options.json_path) = std::string(value);
      return "";
    default:
      return "option " + std::string(flag) + " is not handled";
  }
}

}  // namespace stratacl::bench
