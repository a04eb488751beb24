// Command-line options of scl-bench, spelled as in nccl-tests.
#ifndef STRATACL_TOOLS_SCL_BENCH_OPTIONS_H_
#define STRATACL_TOOLS_SCL_BENCH_OPTIONS_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "stratacl/stratacl.h"

namespace stratacl::bench {

// Where the send and recv buffers come from.
enum class MemKind {
  kHeap,    // sclMemAlloc: reachable by peers without copies
  kMalloc,  // posix_memalign: foreign memory, staged (or read with CMA once registered)
};

std::string_view mem_kind_name(MemKind kind);

// The memory regime measured (the paper's comparison): which buffers, and how peers reach them.
enum class Mode {
  kAuto,      // buffers as --mem says, no registration; the library picks the path
  kZeroCopy,  // heap buffers, read and written by peers in place
  kStaged,    // malloc buffers, copied through the communicator's staging area
  kCma,       // malloc buffers registered with sclCommRegister, read by peers with CMA
};

struct Options {
  std::string collective;  // a collective's name, a comma-separated list of names, or "all"
  size_t min_bytes = size_t{32} << 20;
  size_t max_bytes = size_t{32} << 20;
  size_t step_factor = 2;  // multiplicative steps, used when step_bytes == 0
  size_t step_bytes = 0;   // additive steps (-i)
  int iters = 20;
  int warmup = 5;
  bool check = true;
  std::vector<sclDataType_t> types = {sclFloat32};
  std::vector<sclRedOp_t> ops = {sclSum};
  int root = 0;  // checked against the rank count once the communicator exists
  MemKind mem = MemKind::kHeap;
  Mode mode = Mode::kAuto;
  int repeats = 1;        // -R: timed repeats per row, the median (and p99) is reported
  std::string csv_path;   // --csv: one row per measurement, written by rank 0; empty: none
  std::string json_path;  // --json: the same rows and the run header as one JSON object
};

std::string_view mode_name(Mode mode);
// The regime a run really measures: auto resolves by the memory kind.
Mode effective_mode(const Options& options);

struct ParseResult {
  enum class Status { kRun, kHelp, kError };
  Status status = Status::kRun;
  Options options;
  std::string error;  // names the offending option when status == kError
};

ParseResult parse_options(int argc, const char* const* argv);

std::string usage_text();

// The collective names of options.collective, in the order to run them ("all" expands to every
// collective). Every name is known once parse_options has accepted the options.
std::vector<std::string> selected_collectives(const Options& options);

// The byte sizes of the rows, in the order they run; never empty for parsed options.
std::vector<size_t> size_steps(const Options& options);

}  // namespace stratacl::bench

#endif  // STRATACL_TOOLS_SCL_BENCH_OPTIONS_H_
