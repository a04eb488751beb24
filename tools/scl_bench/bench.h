// The measurement loop: buffers, the check run, warm-up and timed iterations of every row.
#ifndef STRATACL_TOOLS_SCL_BENCH_BENCH_H_
#define STRATACL_TOOLS_SCL_BENCH_BENCH_H_

#include <cstddef>
#include <vector>

#include "collectives.h"
#include "options.h"
#include "report.h"
#include "stratacl/stratacl.h"

namespace stratacl::bench {

// Memory for the send or recv buffer, from the library heap or from posix_memalign.
class Buffer {
 public:
  Buffer(size_t bytes, MemKind kind);  // throws LibraryError when allocation fails
  ~Buffer();
  // Registers the buffer on `comm` (sclCommRegister) until destruction; returns the seconds
  // the call took. Throws LibraryError.
  double register_on(sclComm_t comm);
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  char* data() const { return static_cast<char*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  size_t bytes_;
  MemKind kind_;
  sclComm_t reg_comm_ = nullptr;
  void* reg_handle_ = nullptr;
};

// What registering the buffers cost (mode cma), on this rank.
struct RegistrationCost {
  int buffers = 0;
  size_t bytes = 0;       // of each buffer
  double first_us = 0;    // a new registration, mean over the buffers
  double cached_us = 0;   // registering an already registered range again (a cache hit)
  double release_us = 0;  // dropping such an extra reference
};

class Bench {
 public:
  // Allocates the buffers once, at the largest size of the run, and touches every page so
  // page faults stay out of the timings. Throws LibraryError.
  Bench(const Options& options, sclComm_t comm, int nranks, int rank, int version);

  // Measures every row of one collective (every type, op and size, -N times) into one table of
  // `report`. Every rank calls it; throws LibraryError.
  void run(const Collective& collective, Report& report);

  // The bytes of the send and recv buffers together.
  size_t buffer_bytes() const { return 2 * buffer_size_; }

  // Zero unless the run registers its buffers (mode cma).
  const RegistrationCost& registration_cost() const { return registration_; }

 private:
  void measure_registration();
  Measurement measure(const Collective& collective, sclDataType_t type, sclRedOp_t op, size_t count,
                      bool in_place);
  void launch(const Collective& collective, const LaunchArgs& args);
  uint64_t sum_over_ranks(uint64_t local);
  // Every rank's `values`, element by element, combined over the ranks as -a says; `average`
  // kMax always for the per-iteration times (nccl-tests: the slowest process).
  std::vector<double> over_ranks(const std::vector<double>& values, Average average);
  struct Percentiles {
    double median;
    double p99;
  };
  // The median and the p99 (nearest rank) of the repeats' times.
  static Percentiles percentiles(std::vector<double> times);
  IterationStats iteration_stats(const std::vector<double>& local_us);

  const Options& options_;
  sclComm_t comm_;
  int nranks_;
  int rank_;
  int version_;
  std::vector<size_t> sizes_;
  size_t buffer_size_;
  Buffer send_;
  Buffer recv_;
  Buffer stats_;  // always library heap: the reductions of timings and wrong counts
  size_t stats_slots_;
  RegistrationCost registration_;
};

}  // namespace stratacl::bench

#endif  // STRATACL_TOOLS_SCL_BENCH_BENCH_H_
