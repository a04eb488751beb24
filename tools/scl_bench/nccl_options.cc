#include "nccl_options.h"

namespace stratacl::bench {
namespace {

// One row of the table: the option, its letter and its long name.
struct Flag {
  OptionKey key;
  char short_name;  // 0: long name only
  std::string_view long_name;
};

// Every option takes a value except -h.
constexpr Flag kFlags[] = {
    {OptionKey::kThreads, 't', "nthreads"},
    {OptionKey::kGpus, 'g', "ngpus"},
    {OptionKey::kMinBytes, 'b', "minbytes"},
    {OptionKey::kMaxBytes, 'e', "maxbytes"},
    {OptionKey::kStepBytes, 'i', "stepbytes"},
    {OptionKey::kStepFactor, 'f', "stepfactor"},
    {OptionKey::kIters, 'n', "iters"},
    {OptionKey::kAggIters, 'm', "agg_iters"},
    {OptionKey::kWarmup, 'w', "warmup_iters"},
    {OptionKey::kCycles, 'N', "run_cycles"},
    {OptionKey::kParallelInit, 'p', "parallel_init"},
    {OptionKey::kCheck, 'c', "check"},
    {OptionKey::kOp, 'o', "op"},
    {OptionKey::kDatatype, 'd', "datatype"},
    {OptionKey::kRoot, 'r', "root"},
    {OptionKey::kBlocking, 'z', "blocking"},
    {OptionKey::kStreamNull, 'y', "stream_null"},
    {OptionKey::kTimeout, 'T', "timeout"},
    {OptionKey::kCudaGraph, 'G', "cudagraph"},
    {OptionKey::kCpuTime, 'C', "report_cputime"},
    {OptionKey::kTimestamps, 'S', "report_timestamps"},
    {OptionKey::kOutputFile, 'J', "output_file"},
    {OptionKey::kAverage, 'a', "average"},
    {OptionKey::kRegister, 'R', "local_register"},
    {OptionKey::kCtaPolicy, 'x', "cta_policy"},
    {OptionKey::kDeviceImpl, 'D', "device_implementation"},
    {OptionKey::kDeviceCtas, 'V', "device_cta_count"},
    {OptionKey::kMemoryReport, 'M', "memory"},
    {OptionKey::kUnalign, 'u', "unalign"},
    {OptionKey::kPerIter, 'I', "per_iter_timing"},
    {OptionKey::kPerIterSkip, 'K', "per_iter_skip"},
    {OptionKey::kHelp, 'h', "help"},
    {OptionKey::kMem, 0, "mem"},
    {OptionKey::kMode, 0, "mode"},
    {OptionKey::kCsv, 0, "csv"},
    {OptionKey::kJson, 0, "json"},
    {OptionKey::kRepeats, 0, "repeats"},
};

// The nccl-tests options that have nothing to act on here, and why. They are accepted with any
// value; the run says which ones it ignored.
struct Ignored {
  OptionKey key;
  std::string_view why;
};

constexpr Ignored kIgnored[] = {
    {OptionKey::kThreads, "one rank per process; start ranks with the launcher (stratarun -n)"},
    {OptionKey::kGpus, "one rank per process; start ranks with the launcher (stratarun -n)"},
    {OptionKey::kParallelInit, "each process initialises its one rank already"},
    {OptionKey::kStreamNull, "every call runs on the NULL stream already (and returns when done)"},
    {OptionKey::kCudaGraph, "no CUDA graphs on CPU ranks"},
    {OptionKey::kCpuTime, "the times are the host's clock already"},
    {OptionKey::kCtaPolicy, "no GPU thread blocks"},
    {OptionKey::kDeviceImpl, "no device-side implementation"},
    {OptionKey::kDeviceCtas, "no GPU thread blocks"},
};

}  // namespace

std::optional<std::string_view> why_ignored(OptionKey key) {
  for (const Ignored& entry : kIgnored) {
    if (entry.key == key) return entry.why;
  }
  return std::nullopt;
}

std::optional<OptionKey> look_up_long(std::string_view name, bool& ambiguous) {
  ambiguous = false;
  std::optional<OptionKey> prefix_match;
  int prefix_matches = 0;
  for (const Flag& flag : kFlags) {
    if (flag.long_name == name) return flag.key;
    if (!name.empty() && flag.long_name.starts_with(name)) {
      prefix_match = flag.key;
      ++prefix_matches;
    }
  }
  if (prefix_matches == 1) return prefix_match;
  ambiguous = prefix_matches > 1;
  return std::nullopt;
}

std::optional<OptionKey> look_up_short(char c) {
  for (const Flag& flag : kFlags) {
    if (flag.short_name != 0 && flag.short_name == c) return flag.key;
  }
  return std::nullopt;
}

}  // namespace stratacl::bench
