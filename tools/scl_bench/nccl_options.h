// scl-bench's option table: every option of nccl-tests (src/common.cu) by letter and long
// name, and scl-bench's own (long names only). parse_options (options.h) finds options here;
// what each one's value does is option_values.h's.
#ifndef STRATACL_TOOLS_SCL_BENCH_NCCL_OPTIONS_H_
#define STRATACL_TOOLS_SCL_BENCH_NCCL_OPTIONS_H_

#include <optional>
#include <string_view>

namespace stratacl::bench {

enum class OptionKey {
  // nccl-tests' options (src/common.cu), in its order.
  kThreads,
  kGpus,
  kMinBytes,
  kMaxBytes,
  kStepBytes,
  kStepFactor,
  kIters,
  kAggIters,
  kWarmup,
  kCycles,
  kParallelInit,
  kCheck,
  kOp,
  kDatatype,
  kRoot,
  kBlocking,
  kStreamNull,
  kTimeout,
  kCudaGraph,
  kCpuTime,
  kTimestamps,
  kOutputFile,
  kAverage,
  kRegister,
  kCtaPolicy,
  kDeviceImpl,
  kDeviceCtas,
  kMemoryReport,
  kUnalign,
  kPerIter,
  kPerIterSkip,
  kHelp,
  // scl-bench's own (long names only, so that no later nccl-tests letter can clash).
  kMem,
  kMode,
  kCsv,
  kJson,
  kRepeats,
};

// An exact long name, or else the one long name it abbreviates (as getopt_long accepts).
// nullopt with `ambiguous` set when several names start with it.
std::optional<OptionKey> look_up_long(std::string_view name, bool& ambiguous);
// The option a letter stands for (-b: --minbytes), if any.
std::optional<OptionKey> look_up_short(char c);

// Why an nccl-tests option has nothing to act on here, or nullopt for one that has. Those are
// accepted with any value; the run says which ones it ignored.
std::optional<std::string_view> why_ignored(OptionKey key);

}  // namespace stratacl::bench

#endif  // STRATACL_TOOLS_SCL_BENCH_NCCL_OPTIONS_H_
