// scl-bench: nccl-tests compatible bandwidth and correctness benchmark of StrataCL.
// Run one process per rank under a launcher: stratarun -n 4 scl-bench all -b 8 -e 64M -f 4.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "bench.h"
#include "collectives.h"
#include "errors.h"
#include "options.h"
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
RunInfo DescribeRun(const Options& options, sclComm_t comm, int nranks, int rank, int version) {
  RunInfo info;
  info.version = version;
  info.nranks = nranks;
  info.mem = std::string(MemKindName(options.mem));
  info.mode = std::string(ModeName(EffectiveMode(options)));
  info.iters = options.iters;
  info.warmup = options.warmup;
  info.repeats = options.repeats;
  info.check = options.check;
  if (rank == 0) {
    info.host = HostName();
    info.isa = ReductionIsa();
    info.memcpy_gbs = MeasureMemcpyGBs();
  }
  Require(sclBarrier(comm, nullptr), "sclBarrier");
  return info;
}

// Runs the requested collectives; every rank returns the same status.
int RunAll(const Options& options, sclComm_t comm, int nranks, int rank, int version) {
  Report report(/*print=*/rank == 0, DescribeRun(options, comm, nranks, rank, version));
  report.PrintRunHeader();
  Bench bench(options, comm, nranks, rank, version);
  if (const RegistrationCost& reg = bench.registration_cost(); reg.buffers > 0)
    report.NoteRegistration(reg.first_us, reg.cached_us, reg.release_us, reg.bytes);
  const std::vector<std::string> names = SelectedCollectives(options);
  for (const std::string& name : names) bench.Run(*FindCollective(name), report);
  if (names.size() > 1) report.PrintOverall();
  if (std::string error = report.WriteFiles(options.csv_path, options.json_path); !error.empty()) {
    // Only rank 0 writes files; its exit status fails the job.
    std::fprintf(stderr, "scl-bench: %s\n", error.c_str());
    return kExitFailure;
  }
  // Wrong counts are summed over ranks, so every rank agrees on this.
  return report.total_wrong() == 0 ? kExitOk : kExitWrong;
}

int Main(int argc, char** argv) {
  const ParseResult parsed = ParseOptions(argc, argv);
  if (parsed.status == ParseResult::Status::kHelp) {
    std::fputs(UsageText().c_str(), stdout);
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
    Require(sclCommInitFromEnv(&comm), "sclCommInitFromEnv");
    int nranks = 0, rank = 0, version = 0;
    Require(sclCommCount(comm, &nranks), "sclCommCount");
    Require(sclCommUserRank(comm, &rank), "sclCommUserRank");
    Require(sclGetVersion(&version), "sclGetVersion");

    int status = kExitOk;
    if (options.root >= nranks) {
      if (rank == 0) {
        std::fprintf(stderr, "scl-bench: option -r: root %d is not a rank (0..%d)\n", options.root,
                     nranks - 1);
      }
      status = kExitUsage;
    } else {
      status = RunAll(options, comm, nranks, rank, version);
    }

    // Once destroyed the communicator is gone, so a failure is reported as the thread's.
    sclComm_t done = comm;
    comm = nullptr;
    Require(sclCommDestroy(done), "sclCommDestroy");
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

int main(int argc, char** argv) { return stratacl::bench::Main(argc, argv); }
