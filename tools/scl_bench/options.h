// Command-line options of scl-bench: every option of nccl-tests, with its meaning where it has
// one on CPU ranks (the others are accepted and ignored), plus scl-bench's own. Their names are
// in nccl_options.h, what each value does in option_values.h.
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

// What -z (nccl-tests' --blocking) asks of the timed loop. Calls on CPU ranks return when done,
// so 0 and 2 time the same thing.
enum class Blocking {
  kNone = 0,          // calls back to back
  kBarrierEach = 1,   // a barrier after every call, inside the timing
  kWaitEach = 2,      // wait for every call (a blocking call already has)
  kBarrierOuter = 3,  // a barrier after every outer iteration (-m calls), outside the timing
};

// How the ranks' times of a row become its time (-a, nccl-tests' --average).
enum class Average { kRank0 = 0, kMean = 1, kMin = 2, kMax = 3 };

struct Options {
  std::string collective;  // a collective's name, a comma-separated list of names, or "all"
  size_t min_bytes = size_t{32} << 20;
  size_t max_bytes = size_t{32} << 20;
  size_t step_factor = 2;  // multiplicative steps, used when step_bytes == 0
  size_t step_bytes = 0;   // additive steps (-i, or -f 1)
  int iters = 20;
  int agg_iters = 1;  // -m: calls per timed iteration
  int warmup = 5;
  int cycles = 1;       // -N: passes over the sizes of each type and op; 0: until killed
  int check_iters = 1;  // -c: checked calls per row before timing (0: no check)
  std::vector<sclDataType_t> types = {sclFloat32};
  std::vector<sclRedOp_t> ops = {sclSum};
  int root = 0;  // checked against the rank count once the communicator exists
  MemKind mem = MemKind::kHeap;
  Mode mode = Mode::kAuto;
  Blocking blocking = Blocking::kNone;
  Average average = Average::kMax;  // the slowest rank (nccl-tests' default is the mean)
  int timeout_s = 0;                // -T: the library's deadline for every wait; 0: its default
  int unalign = 0;                  // -u: buffers start this many elements past their alignment
  bool timestamps = false;          // -S: a timestamp at the end of every row
  bool memory_report = false;       // -M: resident memory at the end
  bool per_iter = false;            // -I: every iteration timed, min/max/p99/cv% per column group
  int per_iter_skip = 0;            // -K: leading iterations left out of those statistics
  int repeats = 1;        // --repeats: timed repeats per row, the median (and p99) is reported
  std::string csv_path;   // --csv: one row per measurement, written by rank 0; empty: none
  std::string json_path;  // --json, -J: the same rows and the run header as one JSON object
  // Lines rank 0 prints before measuring: nccl-tests options given that change nothing here.
  std::vector<std::string> notes;
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

// `program_collective` is the collective the program's name selects (all_reduce_perf and the
// other nccl-tests names); empty for scl-bench, which takes the collective as an argument.
ParseResult parse_options(int argc, const char* const* argv,
                          std::string_view program_collective = {});

// `program` is the name the tool was started by; `program_collective` as for parse_options.
std::string usage_text(std::string_view program = "scl-bench",
                       std::string_view program_collective = {});

// The collective an nccl-tests program name stands for ("all_reduce_perf" -> "allreduce"), from
// the basename of argv[0]; empty for any other name.
std::string_view collective_of_program(std::string_view argv0);

// The collective names of options.collective, in the order to run them ("all" expands to every
// collective). Every name is known once parse_options has accepted the options.
std::vector<std::string> selected_collectives(const Options& options);

// The byte sizes of the rows, in the order they run; never empty for parsed options.
std::vector<size_t> size_steps(const Options& options);

}  // namespace stratacl::bench

#endif  // STRATACL_TOOLS_SCL_BENCH_OPTIONS_H_
