// scl-bench: nccl-tests compatible bandwidth and correctness benchmark of StrataCL.
// Run one process per rank under a launcher: stratarun -n 4 scl-bench all -b 8 -e 64M -f 4.
// MoE dispatch/combine: stratarun -n 4 scl-bench moe [options] (moe_bench.h).
// Compute/communication overlap: stratarun -n 2 scl-bench overlap [options] (overlap_bench.h).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "bench.h"
#include "collectives.h"
#include "errors.h"
#include "moe_bench.h"
#include "options.h"
#include "overlap_bench.h"
#include "report.h"
#include "run_info.h"
#include "stratacl/stratacl.h"

namespace stratacl::bench {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitWrong = 1;
constexpr int kExitUsage = 2;
constexpr int kExitFailure = 3;

// What the outputs say about the run. Rank 0 measures the memcpy bandwidth while the other
// ranks wait in a barrier, before any buffer of the benchmark exists.
RunInfo describe_run(const Options& options, sclComm_t comm, int nranks, int rank, int version) {
  RunInfo info;
  info.version = version;
  info.nranks = nranks;
  info.mem = std::string(mem_kind_name(options.mem));
  info.mode = std::string(mode_name(effective_mode(options)));
  info.iters = options.iters;
  info.warmup = options.warmup;
  info.repeats = options.repeats;
  info.check = options.check;
  if (rank == 0) {
    info.host = host_name();
    info.isa = reduction_isa();
    info.memcpy_gbs = measure_memcpy_gbs();
  }
  require(sclBarrier(comm, nullptr), "sclBarrier");
  return info;
}

// Runs the requested collectives; every rank returns the same status.
int run_all(const Options& options, sclComm_t comm, int nranks, int rank, int version) {
  Report report(/*print=*/rank == 0, describe_run(options, comm, nranks, rank, version));
  report.print_run_header();
  Bench bench(options, comm, nranks, rank, version);
  if (const RegistrationCost& reg = bench.registration_cost(); reg.buffers > 0)
    report.note_registration(reg.first_us, reg.cached_us, reg.release_us, reg.bytes);
  const std::vector<std::string> names = selected_collectives(options);
  for (const std::string& name : names) bench.run(*find_collective(name), report);
  if (names.size() > 1) report.print_overall();
  if (std::string error = report.write_files(options.csv_path, options.json_path); !error.empty()) {
    // Only rank 0 writes files; its exit status fails the job.
    std::fprintf(stderr, "scl-bench: %s\n", error.c_str());
    return kExitFailure;
  }
  // Wrong counts are summed over ranks, so every rank agrees on this.
  return report.total_wrong() == 0 ? kExitOk : kExitWrong;
}

int run_main(int argc, char** argv) {
  const ParseResult parsed = parse_options(argc, argv);
  if (parsed.status == ParseResult::Status::kHelp) {
    std::fputs(usage_text().c_str(), stdout);
    return kExitOk;
  }
  if (parsed.status == ParseResult::Status::kError) {
    // Every rank parses the same arguments, so every rank reports; there is no rank yet.
    std::fprintf(stderr, "scl-bench: %s\nRun 'scl-bench -h' for usage.\n", parsed.error.c_str());
    return kExitUsage;
  }
  const Options& options = parsed.options;

  sclComm_t comm = nullptr;
  try {
    require(sclCommInitFromEnv(&comm), "sclCommInitFromEnv");
    int nranks = 0, rank = 0, version = 0;
    require(sclCommCount(comm, &nranks), "sclCommCount");
    require(sclCommUserRank(comm, &rank), "sclCommUserRank");
    require(sclGetVersion(&version), "sclGetVersion");

    int status = kExitOk;
    if (options.root >= nranks) {
      if (rank == 0) {
        std::fprintf(stderr, "scl-bench: option -r: root %d is not a rank (0..%d)\n", options.root,
                     nranks - 1);
      }
      status = kExitUsage;
    } else {
      status = run_all(options, comm, nranks, rank, version);
    }

    // Once destroyed the communicator is gone, so a failure is reported as the thread's.
    sclComm_t done = comm;
    comm = nullptr;
    require(sclCommDestroy(done), "sclCommDestroy");
    return status;
  } catch (const LibraryError& error) {
    const char* detail = error.detail().empty() ? sclGetLastError(comm) : error.detail().c_str();
    std::fprintf(stderr, "scl-bench: %s failed: %s: %s\n", error.call().c_str(),
                 sclGetErrorString(error.result()), detail);
    // Aborting lets peers blocked in a collective with this rank fail instead of time out.
    if (comm != nullptr) sclCommAbort(comm);
    return kExitFailure;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "scl-bench: %s\n", error.what());
    if (comm != nullptr) sclCommAbort(comm);
    return kExitFailure;
  }
}

}  // namespace
}  // namespace stratacl::bench

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "moe")
    return stratacl::bench::run_moe_main(argc - 1, argv + 1);
  if (argc > 1 && std::string(argv[1]) == "overlap")
    return stratacl::bench::run_overlap_main(argc - 1, argv + 1);
  return stratacl::bench::run_main(argc, argv);
}
