// scl-bench: nccl-tests compatible bandwidth and correctness benchmark of StrataCL.
// Run one process per rank under a launcher: stratarun -n 4 scl-bench all -b 8 -e 64M -f 4.
// Started by an nccl-tests program name (all_reduce_perf, ...: links installed beside it), it
// measures that program's collective and takes an nccl-tests command line unchanged.
// MoE dispatch/combine: stratarun -n 4 scl-bench moe [options] (moe_bench.h).
// Compute/communication overlap: stratarun -n 2 scl-bench overlap [options] (overlap_bench.h).
// Communicator creation: stratarun -n 4 scl-bench split [--repeats N] (split_bench.h).

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "bench.h"
#include "collectives.h"
#include "errors.h"
#include "moe_bench.h"
#include "options.h"
#include "overlap_bench.h"
#include "report.h"
#include "run_info.h"
#include "split_bench.h"
#include "stratacl/stratacl.h"

namespace stratacl::bench {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitWrong = 1;
constexpr int kExitUsage = 2;
constexpr int kExitFailure = 3;

std::string_view base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string_view average_name(Average average) {
  switch (average) {
    case Average::kRank0:
      return "rank0";
    case Average::kMean:
      return "mean";
    case Average::kMin:
      return "min";
    default:
      return "max";
  }
}

// What the outputs say about the run; the memcpy bandwidth comes after the rows (run_all).
RunInfo describe_run(const Options& options, std::string_view program, int nranks, int rank,
                     int version) {
  RunInfo info;
  info.version = version;
  info.nranks = nranks;
  info.mem = std::string(mem_kind_name(options.mem));
  info.mode = std::string(mode_name(effective_mode(options)));
  info.iters = options.iters;
  info.warmup = options.warmup;
  info.repeats = options.repeats;
  info.check_iters = options.check_iters;
  info.agg_iters = options.agg_iters;
  info.unalign = options.unalign;
  info.average = std::string(average_name(options.average));
  info.program = std::string(program);
  if (rank == 0) {
    info.host = host_name();
    info.isa = reduction_isa();
  }
  return info;
}

// The most any rank holds of `local`.
uint64_t most_over_ranks(uint64_t local, sclComm_t comm) {
  void* slot = nullptr;
  require(sclMemAlloc(&slot, sizeof(uint64_t)), "sclMemAlloc");
  *static_cast<uint64_t*>(slot) = local;
  const sclResult_t result = sclAllReduce(slot, slot, 1, sclUint64, sclMax, comm, nullptr);
  const uint64_t most = *static_cast<uint64_t*>(slot);
  sclMemFree(slot);
  require(result, "sclAllReduce");
  return most;
}

// Runs the requested collectives; every rank returns the same status. `resident_before_init`
// is this process's resident memory before the communicator existed (for -M).
int run_all(const Options& options, std::string_view program, sclComm_t comm, int nranks, int rank,
            int version, uint64_t resident_before_init) {
  const uint64_t resident_after_init = resident_bytes();
  Columns columns;
  columns.p99 = options.repeats > 1;
  columns.iterations = options.per_iter;
  columns.timestamp = options.timestamps;
  Report report(/*print=*/rank == 0, describe_run(options, program, nranks, rank, version),
                columns);
  report.print_run_header();
  for (const std::string& note : options.notes) report.print_note(note);
  Bench bench(options, comm, nranks, rank, version);
  const uint64_t resident_with_buffers = resident_bytes();
  if (const RegistrationCost& reg = bench.registration_cost(); reg.buffers > 0)
    report.note_registration(reg.first_us, reg.cached_us, reg.release_us, reg.bytes);
  const std::vector<std::string> names = selected_collectives(options);
  for (const std::string& name : names) bench.run(*find_collective(name), report);
  if (names.size() > 1) report.print_overall();
  if (options.memory_report) {
    const uint64_t resident_end = resident_bytes();
    auto grown = [](uint64_t from, uint64_t to) { return to > from ? to - from : 0; };
    const uint64_t init = most_over_ranks(grown(resident_before_init, resident_after_init), comm);
    const uint64_t buffers =
        most_over_ranks(grown(resident_after_init, resident_with_buffers), comm);
    const uint64_t measuring = most_over_ranks(grown(resident_with_buffers, resident_end), comm);
    report.print_memory(init, buffers, measuring);
  }
  // Rank 0 measures the memcpy bandwidth after the rows, while the others wait in a barrier.
  // Measured first, its second of one busy rank left the others queued on the remaining cores,
  // and the scheduler took 100-200 ms to spread them again: the first rows ran in that state, 2x
  // slower at 2 hosts x 2 ranks (docs/PERFORMANCE.md, "Small calls' launch states").
  if (rank == 0) {
    // The rows' buffers are still held: where 512 MiB more is not to be had, the figure is
    // missing (nan), not the rows.
    try {
      report.set_memcpy_gbs(measure_memcpy_gbs());
    } catch (const std::bad_alloc&) {
      report.set_memcpy_gbs(std::numeric_limits<double>::quiet_NaN());
    }
  }
  require(sclBarrier(comm, nullptr), "sclBarrier");
  report.print_memcpy();
  if (std::string error = report.write_files(options.csv_path, options.json_path); !error.empty()) {
    // Only rank 0 writes files; its exit status fails the job.
    std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(program.size()), program.data(),
                 error.c_str());
    return kExitFailure;
  }
  // Wrong counts are summed over ranks, so every rank agrees on this.
  return report.total_wrong() == 0 ? kExitOk : kExitWrong;
}

int run_main(int argc, char** argv) {
  const std::string_view program = base_name(argv[0]);
  const std::string_view program_collective = collective_of_program(argv[0]);
  const std::string name = program_collective.empty() ? "scl-bench" : std::string(program);
  const ParseResult parsed = parse_options(argc, argv, program_collective);
  if (parsed.status == ParseResult::Status::kHelp) {
    std::fputs(usage_text(name, program_collective).c_str(), stdout);
    return kExitOk;
  }
  if (parsed.status == ParseResult::Status::kError) {
    // Every rank parses the same arguments, so every rank reports; there is no rank yet.
    std::fprintf(stderr, "%s: %s\nRun '%s -h' for usage.\n", name.c_str(), parsed.error.c_str(),
                 name.c_str());
    return kExitUsage;
  }
  const Options& options = parsed.options;
  // -T: the library's deadline for every wait, read when the communicator is created.
  if (options.timeout_s > 0) {
    setenv("STRATACL_TIMEOUT_MS", std::to_string(options.timeout_s * 1000).c_str(), 1);
  }

  sclComm_t comm = nullptr;
  try {
    const uint64_t resident_before_init = resident_bytes();
    require(sclCommInitFromEnv(&comm), "sclCommInitFromEnv");
    int nranks = 0, rank = 0, version = 0;
    require(sclCommCount(comm, &nranks), "sclCommCount");
    require(sclCommUserRank(comm, &rank), "sclCommUserRank");
    require(sclGetVersion(&version), "sclGetVersion");

    int status = kExitOk;
    if (options.root >= nranks) {
      if (rank == 0) {
        std::fprintf(stderr, "%s: option -r: root %d is not a rank (0..%d)\n", name.c_str(),
                     options.root, nranks - 1);
      }
      status = kExitUsage;
    } else {
      status = run_all(options, name, comm, nranks, rank, version, resident_before_init);
    }

    // Once destroyed the communicator is gone, so a failure is reported as the thread's.
    sclComm_t done = comm;
    comm = nullptr;
    require(sclCommDestroy(done), "sclCommDestroy");
    return status;
  } catch (const LibraryError& error) {
    const char* detail = error.detail().empty() ? sclGetLastError(comm) : error.detail().c_str();
    std::fprintf(stderr, "%s: %s failed: %s: %s\n", name.c_str(), error.call().c_str(),
                 sclGetErrorString(error.result()), detail);
    // Aborting lets peers blocked in a collective with this rank fail instead of time out.
    if (comm != nullptr) sclCommAbort(comm);
    return kExitFailure;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), error.what());
    if (comm != nullptr) sclCommAbort(comm);
    return kExitFailure;
  }
}

}  // namespace
}  // namespace stratacl::bench

int main(int argc, char** argv) {
  // The subcommands belong to scl-bench's own name; an nccl-tests name takes options only.
  const bool own_name = stratacl::bench::collective_of_program(argv[0]).empty();
  if (own_name && argc > 1 && std::string(argv[1]) == "moe")
    return stratacl::bench::run_moe_main(argc - 1, argv + 1);
  if (own_name && argc > 1 && std::string(argv[1]) == "overlap")
    return stratacl::bench::run_overlap_main(argc - 1, argv + 1);
  if (own_name && argc > 1 && std::string(argv[1]) == "split")
    return stratacl::bench::run_split_main(argc - 1, argv + 1);
  return stratacl::bench::run_main(argc, argv);
}
